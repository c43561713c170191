/** @jsxImportSource hono/jsx */
/**
 * What a resumed pause was answered, on its card of the run page (both
 * inspectors), as `waymark inspect` says it: approved or declined, the
 * comment and the rest of the metadata, who decided and where the decision
 * was recorded, and the writer that resumed the run with it. The facts are
 * the decision that was applied (a screen's, an API call's, `waymark
 * decide`'s) and, without one (a resume from code), the answer the pause's
 * claim row carries.
 */
import type { FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import { json, Time, Writer } from './layout.js';
import type { DecisionShown } from './source.js';

/** An answer as `resume` records it: `{ approved, metadata }` (anything else is shown as it is). */
const asResume = (a: Json | null | undefined): { approved: boolean; metadata: Record<string, Json> } | null => {
  if (!a || typeof a !== 'object' || Array.isArray(a) || typeof a.approved !== 'boolean') return null;
  const m = a.metadata;
  return { approved: a.approved, metadata: m && typeof m === 'object' && !Array.isArray(m) ? m : {} };
};

/**
 * A resumed pause's answer: from `decision` (applied with this pause) when there is one, else from `answer` (its
 * claim row's); `by`/`at`: the writer whose row resumed the run, and when. Nothing when neither is known.
 */
export const PauseAnswer: FC<{
  decision: DecisionShown | null;
  answer: Json | null | undefined;
  by: string | null;
  at: string | null;
}> = ({ decision, answer, by, at }) => {
  const resume = decision ? { approved: decision.approved, metadata: decision.metadata } : asResume(answer);
  if (!resume && (answer === null || answer === undefined)) return null;
  const comment = resume && typeof resume.metadata.comment === 'string' ? resume.metadata.comment : null;
  const rest = resume ? Object.fromEntries(Object.entries(resume.metadata).filter(([k]) => k !== 'comment')) : {};
  return (
    <div class="answer" data-testid="pause-answer" data-approved={resume ? String(resume.approved) : ''}>
      <p>
        <strong>{resume ? (resume.approved ? 'Approved' : 'Declined') : 'Answered'}</strong>
        {decision ? (
          <>
            {' '}
            by <span data-testid="answered-by">{decision.decidedBy}</span> at <Time iso={decision.decidedAt} /> (
            {decision.source === 'local' ? 'recorded in a local store' : 'recorded on the plane'})
          </>
        ) : (
          ' from code (no decision was recorded for it)'
        )}
        {by && (
          <>
            ; the run was resumed with it by writer <Writer id={by} />
            {at && (
              <>
                {' '}
                at <Time iso={at} />
              </>
            )}
          </>
        )}
        .
      </p>
      {comment !== null && <p class="comment">“{comment}”</p>}
      {Object.keys(rest).length > 0 && <pre>{json(rest as Json)}</pre>}
      {!resume && <pre>{json(answer as Json)}</pre>}
    </div>
  );
};
