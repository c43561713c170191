/** @jsxImportSource hono/jsx */
/**
 * Approvals in the inspector, over any `InspectorSource` that has
 * the approval members (source.ts): the "Pending approvals" page (the inbox:
 * unanswered pauses oldest first, then every decision in recording order),
 * and, on a paused run's page, the approve/decline form and the decisions of
 * the run's pauses with where each stands. The inbox is a form too: tick
 * pauses and approve or decline them together, or answer one from its row;
 * each pause's decision is recorded as the run page's form records one
 * (`recordOne`), and the answer page lists what was recorded and, pause by
 * pause, what was refused and why (one refusal stops no other).
 *
 * A screen only RECORDS a decision (`source.recordDecision`); it never runs a
 * step or claims the pause: the application's worker (`serveDecisions`)
 * applies it. So the form's answer is a redirect to the run's page (POST,
 * then 303: a reload never posts twice), which shows the decision `pending`
 * until a worker applies it. Who may decide, and the CSRF token, are the
 * mounter's (`ApprovalOptions`): the plane's session with the `approve`
 * scope, or the local UI's user. A refusal (bad token, no scope, bad input,
 * a pause closed or already decided) is a page naming the stable code, and
 * nothing is recorded.
 */
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';
import { useContext, type FC } from 'hono/jsx';
import type { HtmlEscapedString } from 'hono/utils/html';
import { ErrorCode, hasCode } from '../shared/errors.js';
import { REFUSAL_STATUS, type RefusalCode } from '../shared/refusals.js';
import { CSRF_REFUSAL } from './csrf.js';
import type { Json } from '../shared/json.js';
import { LIMITS } from '../shared/limits.js';
import { Badge, Id, json, Layout, LiveRegion, ShortId, Table, Time, Writer } from './layout.js';
import { FRAME } from './frame.js';
import { bulkRequest, commentOf, formRequest, pauseKey } from './decision-form.js';
import { ActionRefusedPage, BadCursorPage, WithTimes } from './refused-page.js';
import type { DecisionShown, InboxItem, InspectorSource, Paged } from './source.js';

/** Who may decide in a request, and the CSRF token of its forms. */
export interface ApprovalOptions<E extends Env> {
  /** The name a decision is recorded under, or why this request may not decide (shown). */
  decider(c: Context<E>): Promise<{ by: string } | { refused: string }>;
  /** The CSRF token this request's forms carry. */
  csrf(c: Context<E>): string;
  /** Whether a posted form's token (and the request's Origin) pass. */
  csrfOk(c: Context<E>, token: unknown): boolean;
}

/** A duration as words ("3 minutes"). */
export function ageWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const unit = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;
  if (s < 60) return unit(s, 'second');
  if (s < 3600) return unit(Math.round(s / 60), 'minute');
  if (s < 48 * 3600) return unit(Math.round(s / 3600), 'hour');
  return unit(Math.round(s / 86400), 'day');
}

const STATE_WORDS: Record<DecisionShown['state'], string> = {
  pending: "waiting for the application's worker to apply it",
  claimed: 'claimed by a worker, not yet reported applied',
  applied: 'applied',
  superseded: 'superseded: the pause was answered otherwise, or its run was cancelled or deleted',
};

/** One decision: approved or declined, by whom, when, its comment, and where it stands. */
export const DecisionCard: FC<{ d: DecisionShown; run?: boolean }> = ({ d, run }) => {
  const comment = typeof d.metadata.comment === 'string' ? d.metadata.comment : null;
  const rest = Object.fromEntries(Object.entries(d.metadata).filter(([k]) => k !== 'comment'));
  return (
    <div class="card decision" data-testid="decision" data-decision={d.decisionId} data-state={d.state}>
      <div class="row-head">
        <strong>{d.approved ? 'Approved' : 'Declined'}</strong>
        <span>
          by <span data-testid="decided-by">{d.decidedBy}</span>
        </span>
        <Time iso={d.decidedAt} />
        <Badge status={d.state} />
        <span class="muted">({d.source === 'local' ? 'recorded in a local store' : 'recorded on the plane'})</span>
      </div>
      {run && (
        <div class="row-meta">
          run <a href={`/runs/${encodeURIComponent(d.executionId)}`}>{d.executionId}</a> · pause{' '}
          <ShortId id={d.checkpointId} />
        </div>
      )}
      {comment !== null && <p class="comment">“{comment}”</p>}
      {Object.keys(rest).length > 0 && <pre>{json(rest as Json)}</pre>}
      <p class="muted" data-testid="decision-state">
        {STATE_WORDS[d.state]}
        {d.appliedBy && (d.state === 'applied' || d.state === 'claimed') && (
          <>
            {' '}
            by writer{' '}
            <span data-testid="applied-by">
              <Writer id={d.appliedBy} />
            </span>
            {d.appliedAt && (
              <>
                {' '}
                at <Time iso={d.appliedAt} />
              </>
            )}
          </>
        )}
        {d.appliedBy && d.state === 'superseded' && (
          <>
            {' '}
            (claimed by <Writer id={d.appliedBy} />)
          </>
        )}
      </p>
    </div>
  );
};

/** The approve/decline form for one open pause. */
export const DecisionForm: FC<{ executionId: string; checkpointId: string; csrf: string }> = (p) => (
  <form
    method="post"
    action={`/runs/${encodeURIComponent(p.executionId)}/decision`}
    class="decide"
    data-testid="decision-form"
  >
    <input type="hidden" name="csrf" value={p.csrf} />
    <input type="hidden" name="checkpointId" value={p.checkpointId} />
    <label>
      Comment (kept with the decision, in metadata.comment)
      <textarea name="comment" rows={3} maxlength={LIMITS.decisionCommentLength}></textarea>
    </label>
    <div class="buttons">
      <button type="submit" name="approved" value="true">
        Approve
      </button>
      <button type="submit" name="approved" value="false" class="decline">
        Decline
      </button>
    </div>
    <p class="muted">This records the decision only; the application's worker resumes the run with it.</p>
  </form>
);

/** The run page's approvals part: the decisions of its pauses (a live region), and the form outside it (or why there is none). */
export const RunApprovals: FC<{
  decisions: DecisionShown[];
  form: { checkpointId: string; csrf: string } | null;
  why: string | null;
  executionId: string;
}> = (p) => (
  <section aria-labelledby="decisions-h" data-testid="run-approvals">
    <h2 id="decisions-h">Decision</h2>
    <LiveRegion name="decisions">
      {p.decisions.map((d) => (
        <DecisionCard d={d} />
      ))}
    </LiveRegion>
    {p.form ? (
      <DecisionForm executionId={p.executionId} checkpointId={p.form.checkpointId} csrf={p.form.csrf} />
    ) : (
      p.why && (
        <p class="muted" data-testid="no-form">
          {p.why}
        </p>
      )
    )}
  </section>
);

/** A pause of the inbox a person may answer from the list: open, no decision yet (the bulk form's checkbox and row buttons). */
export const answerable = (p: InboxItem) => p.state === 'open' && !p.decision;

const InboxCard: FC<{ p: InboxItem; decide: boolean }> = ({ p, decide }) => (
  <li class="card" data-testid="pause" data-execution={p.executionId}>
    <div class="row-head">
      {decide && answerable(p) && (
        <input
          type="checkbox"
          name="pause"
          value={pauseKey(p)}
          aria-label={`select the pause of ${p.executionId}`}
          data-testid="select-pause"
        />
      )}
      <strong>{p.reason}</strong>
      <a href={`/runs/${encodeURIComponent(p.executionId)}#pause-h`} data-row-link="">
        {p.executionId}
      </a>
      {p.state === 'claimed' && <Badge status="claimed" />}
    </div>
    <div class="row-meta">
      <span data-testid="age">paused {ageWords(p.ageMs)} ago</span>
      <span>
        at <Time iso={p.createdAt} />
      </span>
      <span class="mono">
        <Id id={p.agentPath} />
      </span>
    </div>
    <details open>
      <summary>Context</summary>
      <pre>{json(p.context)}</pre>
    </details>
    {p.decision ? <DecisionCard d={p.decision} /> : <p class="muted">No decision yet.</p>}
    {decide && answerable(p) && (
      <div class="buttons" data-testid="row-buttons">
        <button type="submit" name="one" value={`true:${pauseKey(p)}`}>
          Approve
        </button>
        <button type="submit" name="one" value={`false:${pauseKey(p)}`} class="decline">
          Decline
        </button>
      </div>
    )}
  </li>
);

/** The inbox's list, inside the bulk form when this request may decide (`csrf`), else as it reads. */
const InboxList: FC<{ items: InboxItem[]; csrf: string | null }> = ({ items, csrf }) => {
  const list = (
    <ol class="inbox" data-testid="inbox">
      {items.map((x) => (
        <InboxCard p={x} decide={csrf !== null} />
      ))}
    </ol>
  );
  if (csrf === null || !items.some(answerable)) return list;
  return (
    <form method="post" action="/approvals" class="bulk" data-testid="bulk-form">
      <input type="hidden" name="csrf" value={csrf} />
      {list}
      <label>
        Comment (kept with each decision, in metadata.comment)
        <textarea name="comment" rows={2} maxlength={LIMITS.decisionCommentLength}></textarea>
      </label>
      <div class="buttons">
        <button type="submit" name="approved" value="true">
          Approve selected
        </button>
        <button type="submit" name="approved" value="false" class="decline">
          Decline selected
        </button>
      </div>
      <p class="muted">
        Tick pauses and approve or decline them together (at most {LIMITS.bulkDecisions} at once), or use a
        pause&rsquo;s own buttons for that one alone; the comment goes with either. This records decisions only; the
        application&rsquo;s worker resumes each run.
      </p>
    </form>
  );
};

export const ApprovalsPage: FC<{
  pauses: Paged<InboxItem>;
  decisions: Paged<DecisionShown> | null;
  first: boolean;
  firstDecisions: boolean;
  query: (o: { cursor?: string; dcursor?: string }) => string;
  note: string | null;
  /** The bulk form's CSRF token when this request may decide; null: the list only. */
  csrf: string | null;
}> = (p) => (
  <Layout title="Pending approvals">
    <h1>Pending approvals</h1>
    <p class="muted">
      {/* a local store keeps no order of when its pauses opened: its inbox pages by run id */}
      Pauses waiting for an answer, {useContext(FRAME).kind === 'local' ? 'by run id' : 'oldest first'}. Approve or
      decline them here, or open a run to see it whole; the application's worker resumes the run.
    </p>
    {p.note && (
      <p class="muted" data-testid="no-bulk-form">
        {p.note}
      </p>
    )}
    {p.pauses.items.length === 0 ? (
      <p data-testid="inbox-empty">{p.first ? 'Nothing is waiting for a decision.' : 'No more pauses.'}</p>
    ) : (
      <InboxList items={p.pauses.items} csrf={p.csrf} />
    )}
    <div class="pager">
      {!p.first && <a href={p.query({})}>First pauses</a>}
      {p.pauses.nextCursor && <a href={p.query({ cursor: p.pauses.nextCursor })}>More pauses →</a>}
    </div>
    {p.decisions && (
      <section aria-labelledby="all-decisions-h">
        <h2 id="all-decisions-h">Decisions, in the order they were recorded</h2>
        {p.decisions.items.length === 0 ? (
          <p class="muted">None{p.firstDecisions ? ' yet' : ' after these'}.</p>
        ) : (
          <Table columns={['Run', 'Decision', 'By', 'When', 'State', 'Applied by']}>
            {p.decisions.items.map((d) => (
              <tr data-decision={d.decisionId} data-state={d.state}>
                <td>
                  <a href={`/runs/${encodeURIComponent(d.executionId)}#decisions-h`}>
                    <Id id={d.executionId} />
                  </a>
                </td>
                <td>{d.approved ? 'approved' : 'declined'}</td>
                <td>
                  {/* a name a local store gave is what its user typed there, not a key of this plane: say so */}
                  {d.decidedBy}
                  {d.source === 'local' && <span class="muted"> (in a local store)</span>}
                </td>
                <td>
                  <Time iso={d.decidedAt} />
                </td>
                <td>
                  <Badge status={d.state} />
                </td>
                <td>
                  <Writer id={d.appliedBy} />
                </td>
              </tr>
            ))}
          </Table>
        )}
        <div class="pager">
          {!p.firstDecisions && <a href={p.query({})}>First decisions</a>}
          {p.decisions.nextCursor && <a href={p.query({ dcursor: p.decisions.nextCursor })}>More decisions →</a>}
        </div>
      </section>
    )}
  </Layout>
);

/** A decision that was not recorded: the stable code, why, and (already decided) the first decision. */
export const RefusalPage: FC<{
  code: string;
  message: string;
  /** the run whose form this was; null: the inbox's */
  executionId: string | null;
  first: DecisionShown | null;
}> = (p) => (
  <ActionRefusedPage
    title="Decision not recorded"
    code={p.code}
    message={p.message}
    links={[
      ...(p.executionId !== null
        ? [{ href: `/runs/${encodeURIComponent(p.executionId)}`, text: 'Back to the run' }]
        : []),
      { href: '/approvals', text: 'Pending approvals' },
    ]}
  >
    {p.first && (
      <>
        <p>The first decision, which stands:</p>
        <DecisionCard d={p.first} />
      </>
    )}
  </ActionRefusedPage>
);

/**
 * The codes a decision from a screen is refused with (its form's guard, its body, the pause), each answered with
 * its status as the plane's API answers it (shared/refusals.ts, the one table); a failure of another code is thrown.
 */
const DECISION_REFUSALS = [
  ErrorCode.INVALID_REQUEST,
  ErrorCode.INVALID_DECISION,
  ErrorCode.TOO_MANY_PAUSES,
  ErrorCode.CSRF_FAILED,
  ErrorCode.FORBIDDEN,
  ErrorCode.PAUSE_NOT_FOUND,
  ErrorCode.PAUSE_CLOSED,
  ErrorCode.ALREADY_DECIDED,
] as const satisfies readonly RefusalCode[];
type DecisionRefusal = (typeof DECISION_REFUSALS)[number];
const isDecisionRefusal = (code: unknown): code is DecisionRefusal =>
  (DECISION_REFUSALS as readonly unknown[]).includes(code);

/** What recording one decision came to: the decision, or its refusal (the first decision when it is this run's). */
type Recorded = { decision: DecisionShown } | { code: DecisionRefusal; message: string; first: DecisionShown | null };

/**
 * Record one decision through the source: the one way a screen records one, for the run page's form and each pause
 * of the inbox's. A refusal (a code of `DECISION_REFUSALS`) is returned; anything else is thrown.
 */
async function recordOne(
  src: InspectorSource,
  executionId: string,
  req: { checkpointId: string; approved: boolean; comment?: string },
  by: string,
): Promise<Recorded> {
  try {
    return { decision: await src.recordDecision!(executionId, { ...req, metadata: {} }, by) };
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (!isDecisionRefusal(code)) throw e;
    // shown only when it is this run's decision as listed (with its state)
    const named = (e as { details?: { decision?: Partial<DecisionShown> } }).details?.decision;
    const first =
      named && typeof named.state === 'string' && named.executionId === executionId ? (named as DecisionShown) : null;
    return { code, message: (e as Error).message, first };
  }
}

/** What an inbox form came to, pause by pause. */
export interface BulkOutcome {
  approved: boolean;
  recorded: DecisionShown[];
  refused: { executionId: string | null; checkpointId: string | null; key: string; code: string; message: string }[];
}

/** The inbox form's answer: how many decisions were recorded, and each pause that was not, with why. */
export const BulkOutcomePage: FC<{ o: BulkOutcome }> = ({ o }) => {
  const n = o.recorded.length;
  const verb = o.approved ? 'approved' : 'declined';
  return (
    <Layout title="Decisions recorded">
      <h1>Decisions recorded</h1>
      <p data-testid="bulk-summary" role="status">
        {n === 0 ? 'No decision was recorded' : `${n} ${n === 1 ? 'decision' : 'decisions'} recorded (${verb})`}
        {o.refused.length > 0 && `; ${o.refused.length} not recorded`}.
      </p>
      {n > 0 && (
        <ul data-testid="bulk-recorded">
          {o.recorded.map((d) => (
            <li data-decision={d.decisionId}>
              <a href={`/runs/${encodeURIComponent(d.executionId)}#decisions-h`}>{d.executionId}</a>: {verb}, waiting
              for the application&rsquo;s worker to apply it
            </li>
          ))}
        </ul>
      )}
      {o.refused.length > 0 && (
        <ul data-testid="bulk-refused">
          {o.refused.map((r) => (
            <li class="error" data-code={r.code} data-execution={r.executionId ?? ''}>
              {r.executionId !== null ? (
                <a href={`/runs/${encodeURIComponent(r.executionId)}`}>{r.executionId}</a>
              ) : (
                <span class="mono">{r.key.slice(0, 80)}</span>
              )}
              : <code>{r.code}</code> <WithTimes text={r.message} />
            </li>
          ))}
        </ul>
      )}
      <p>
        <a href="/approvals">Back to Pending approvals</a>
      </p>
    </Layout>
  );
};

type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Mount `/approvals` and `POST /runs/:id/decision` (a source without `listPauses`/`recordDecision` gets neither). */
export function mountApprovals<E extends Env>(
  app: Hono<E>,
  o: {
    viewer: MiddlewareHandler<E>;
    source: (c: Context<E>) => InspectorSource;
    wrap: (page: Page, c: Context<E>) => Page;
    approvals: ApprovalOptions<E>;
  },
): void {
  const source = (c: unknown) => o.source(c as Context<E>);
  const ctx = (c: unknown) => c as Context<E>;

  app.get('/approvals', o.viewer, async (c) => {
    const src = source(c);
    if (!src.listPauses) return c.notFound();
    const cursor = c.req.query('cursor') || undefined;
    const dcursor = c.req.query('dcursor') || undefined;
    try {
      const pauses = await src.listPauses({ cursor, limit: 25 });
      const decisions = src.listDecisions ? await src.listDecisions({ cursor: dcursor, limit: 50 }) : null;
      const who = await o.approvals.decider(ctx(c));
      const decide = 'by' in who && !!src.recordDecision;
      if (decide) c.header('cache-control', 'no-store');
      const query = (q: { cursor?: string; dcursor?: string }) => {
        const u = new URLSearchParams(Object.entries(q).filter(([, v]) => v) as [string, string][]);
        return `/approvals${u.size ? `?${u}` : ''}`;
      };
      c.header('cache-control', 'no-store');
      return c.html(
        o.wrap(
          <ApprovalsPage
            pauses={pauses}
            decisions={decisions}
            first={!cursor}
            firstDecisions={!dcursor}
            query={query}
            note={'refused' in who ? who.refused : null}
            csrf={decide ? o.approvals.csrf(ctx(c)) : null}
          />,
          c as unknown as Context<E>,
        ),
      );
    } catch (e) {
      if (hasCode(e, ErrorCode.BAD_CURSOR)) return c.html(o.wrap(<BadCursorPage />, c as unknown as Context<E>), 400);
      throw e;
    }
  });

  app.post('/runs/:id/decision', o.viewer, async (c) => {
    const src = source(c);
    const id = c.req.param('id');
    if (!src.recordDecision) return c.notFound();
    const refuse = (code: DecisionRefusal, message: string, first: DecisionShown | null = null) => {
      c.header('cache-control', 'no-store');
      return c.html(
        o.wrap(
          <RefusalPage code={code} message={message} executionId={id} first={first} />,
          c as unknown as Context<E>,
        ),
        REFUSAL_STATUS[code],
      );
    };
    const form = await c.req.parseBody();
    if (!o.approvals.csrfOk(ctx(c), form.csrf)) {
      return refuse(CSRF_REFUSAL.code, CSRF_REFUSAL.message);
    }
    const who = await o.approvals.decider(ctx(c));
    if ('refused' in who) return refuse(ErrorCode.FORBIDDEN, who.refused);
    const parsed = formRequest(form);
    // the code a decision's body gets everywhere (the plane's route, a local store)
    if ('problems' in parsed)
      return refuse(
        ErrorCode.INVALID_DECISION,
        `invalid decision, nothing was recorded: ${parsed.problems.join('; ')}`,
      );
    const r = await recordOne(src, id, parsed.req, who.by);
    if ('code' in r) return refuse(r.code, r.message, r.first);
    return c.redirect(`/runs/${encodeURIComponent(id)}#decisions-h`, 303);
  });

  /**
   * The inbox's form: one decision per pause named, each recorded as the run page's form records one (`recordOne`),
   * after the same checks (the CSRF token and origin, who may decide); a pause refused (not found, closed, already
   * decided, not a pause) is listed with why and the others go on. At most `LIMITS.bulkDecisions` pauses a post.
   */
  app.post('/approvals', o.viewer, async (c) => {
    const src = source(c);
    if (!src.recordDecision) return c.notFound();
    c.header('cache-control', 'no-store');
    const refuse = (code: DecisionRefusal, message: string) =>
      c.html(
        o.wrap(<RefusalPage code={code} message={message} executionId={null} first={null} />, ctx(c)),
        REFUSAL_STATUS[code],
      );
    const form = await c.req.parseBody({ all: true });
    if (!o.approvals.csrfOk(ctx(c), form.csrf)) {
      return refuse(CSRF_REFUSAL.code, CSRF_REFUSAL.message);
    }
    const who = await o.approvals.decider(ctx(c));
    if ('refused' in who) return refuse(ErrorCode.FORBIDDEN, who.refused);
    const parsed = bulkRequest(form);
    if ('problems' in parsed)
      return refuse(parsed.code, `invalid decisions, nothing was recorded: ${parsed.problems.join('; ')}`);
    const outcome: BulkOutcome = { approved: parsed.approved, recorded: [], refused: [] };
    for (const p of parsed.pauses) {
      if ('problem' in p) {
        outcome.refused.push({
          key: p.key,
          executionId: null,
          checkpointId: null,
          code: ErrorCode.INVALID_DECISION,
          message: `invalid decision, nothing was recorded: ${p.problem}`,
        });
        continue;
      }
      const req = { checkpointId: p.checkpointId, approved: parsed.approved, ...commentOf(parsed.comment) };
      const r = await recordOne(src, p.executionId, req, who.by);
      if ('decision' in r) outcome.recorded.push(r.decision);
      else
        outcome.refused.push({
          key: p.key,
          executionId: p.executionId,
          checkpointId: p.checkpointId,
          code: r.code,
          message: r.message,
        });
    }
    return c.html(o.wrap(<BulkOutcomePage o={outcome} />, ctx(c)));
  });
}
