/** @jsxImportSource hono/jsx */
/**
 * Run requests from the plane's inspector: on a run's page, a "Retry run"
 * form on a failed run, "Recover run" on a stale one (its runner's hold
 * expired mid-run), and "Fork from row #N" on any run with steps, for a
 * session whose key has the `operate` (or the `admin`) scope; a key without it
 * sees why there is no form. The forms post to `POST /runs/:id/requests`,
 * which records the request through `recordRequest` (plane/requests.ts, the
 * API's own code), then answers 303 to the run's page. The plane only records:
 * the application's worker (serveDecisions) applies the request and reports
 * back, and the page shows where each request stands.
 *
 * Guarded as every form acting on a run (run-form.tsx): the session's CSRF
 * token and Origin/Sec-Fetch-Site, the scope checked again on the post; a
 * refusal is a page naming the stable code and saying nothing changed.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { FC } from 'hono/jsx';
import type { HtmlEscapedString } from 'hono/utils/html';
import { and, eq } from 'drizzle-orm';
import { keyName } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints } from '../db/schema.js';
import type { PlaneEnv } from '../http/env.js';
import { HttpError } from '../http/errors.js';
import { recordRequest, requestsOfRun } from '../requests.js';
import { LiveRegion, Time, Writer } from '../../inspector/layout.js';
import type { RunPageProps } from '../../inspector/run-page.js';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import type { RunRequestView } from '../../shared/protocol.js';
import { ExecutionId } from '../../shared/rows.js';
import { holdOf, recoverable } from '../../support/run-words.js';
import { formRefusal, RunActionRefusedPage, sessionMay } from './run-form.js';

type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Whether this request may ask for run requests (a session of a key with the operate or the admin scope), and its form's token. */
export const asker = (c: Context<PlaneEnv>) =>
  sessionMay(
    c,
    'operate',
    "This session's key has no operate scope: it sees this run but cannot ask the application to retry, recover or fork it (log in with a key that has the operate or the admin scope).",
  );

const ACTION_WORDS: Record<RunRequestView['action'], string> = {
  retry: 'Retry',
  recover: 'Recover',
  fork: 'Fork',
};

/** A reason box and the submit button of one request form. */
const RequestForm: FC<{
  executionId: string;
  csrf: string;
  action: RunRequestView['action'];
  label: string;
  children?: unknown;
}> = (p) => (
  <form
    method="post"
    action={`/runs/${encodeURIComponent(p.executionId)}/requests`}
    class="decide"
    data-testid={`${p.action}-form`}
  >
    <input type="hidden" name="csrf" value={p.csrf} />
    <input type="hidden" name="action" value={p.action} />
    {p.children}
    <label for={`${p.action}-reason`}>
      Why (kept with the request and shown on this page)
      <textarea id={`${p.action}-reason`} name="reason" rows={2} maxlength={LIMITS.reasonLength}></textarea>
    </label>
    <div class="buttons">
      <button type="submit">{p.label}</button>
    </div>
  </form>
);

/** Where one request stands, in words. */
const RequestState: FC<{ r: RunRequestView; lastSeq: number }> = ({ r, lastSeq }) => {
  if (r.state === 'applied')
    return (
      <span data-testid="request-applied">
        applied by <Writer id={r.settledBy} />
        {r.settledAt && (
          <>
            {' '}
            at <Time iso={r.settledAt} />
          </>
        )}
        {r.action === 'fork' && r.forkExecutionId ? (
          <>
            : the fork is <a href={`/runs/${encodeURIComponent(r.forkExecutionId)}`}>{r.forkExecutionId}</a>
          </>
        ) : (
          <>: the run went on from #{r.checkpointSeq}</>
        )}
        {r.runStatus && ` (${r.runStatus} when the worker reported)`}
      </span>
    );
  if (r.state === 'started')
    return (
      <span data-testid="request-started">
        started by <Writer id={r.settledBy} />
        {r.forkExecutionId && (
          <>
            : the fork is <a href={`/runs/${encodeURIComponent(r.forkExecutionId)}`}>{r.forkExecutionId}</a>
          </>
        )}{' '}
        (running; its worker reports when it ends)
      </span>
    );
  if (r.state === 'superseded')
    return (
      <span data-testid="request-superseded">
        superseded: the run moved on otherwise before the application applied it ({r.code ?? 'MOVED_ON'}
        {r.message ? `: ${r.message}` : ''})
      </span>
    );
  if (r.state === 'refused')
    return (
      <span class="error" data-testid="request-refused">
        refused by the application: <code>{r.code}</code>
        {r.message ? `: ${r.message}` : ''}
      </span>
    );
  return (
    <span data-testid="request-open">
      waiting for the application (its worker applies it)
      {r.claimedBy && (
        <>
          ; claimed by <Writer id={r.claimedBy} />
        </>
      )}
      {r.action !== 'fork' && lastSeq > r.checkpointSeq && `; the run has moved past #${r.checkpointSeq} meanwhile`}
    </span>
  );
};

/** The run's requests and, for an operate session, the forms that fit the run's state. */
const RequestsSection: FC<{
  executionId: string;
  requests: RunRequestView[];
  who: { csrf: string } | { refused: string };
  failed: boolean;
  stale: boolean;
  forkSeq: number | null;
  lastSeq: number;
}> = (p) => {
  // a second open request of the run and action is refused: its form waits until the first is settled
  // (an applied retry or recover whose rows have not reached the plane yet still names the run's newest row)
  const waiting = (a: RunRequestView['action']) =>
    p.requests.some(
      (r) =>
        r.action === a &&
        (r.state === 'open' || (r.state === 'applied' && a !== 'fork' && r.checkpointSeq >= p.lastSeq)),
    );
  const held = (['retry', 'recover', 'fork'] as const).filter(
    (a) => waiting(a) && (a === 'fork' ? p.forkSeq !== null : a === 'retry' ? p.failed : p.stale),
  );
  return (
    <section aria-labelledby="requests-h" data-testid="run-requests">
      <h2 id="requests-h">Ask the application</h2>
      <p class="muted">
        The plane records the request; the application&rsquo;s worker (serveDecisions, which has the agents and their
        tools) applies it and reports back here. The plane never runs a step.
      </p>
      <LiveRegion name="run requests">
        {p.requests.length > 0 && (
          <ul data-testid="request-list">
            {p.requests.map((r) => (
              <li data-testid="request" data-action={r.action} data-state={r.state}>
                <strong>{ACTION_WORDS[r.action]}</strong> from{' '}
                <a href={`/runs/${encodeURIComponent(r.executionId)}#seq-${r.checkpointSeq}`}>#{r.checkpointSeq}</a>,
                asked by <strong>{r.requestedBy}</strong> <Time iso={r.requestedAt} relative />
                {r.reason && (
                  <>
                    {' '}
                    (<q class="reason">{r.reason}</q>)
                  </>
                )}
                : <RequestState r={r} lastSeq={p.lastSeq} />
              </li>
            ))}
          </ul>
        )}
      </LiveRegion>
      {'refused' in p.who ? (
        <p class="muted" data-testid="no-requests">
          {p.who.refused}
        </p>
      ) : (
        <>
          {held.length > 0 && (
            <p class="muted" data-testid="requests-waiting">
              {held.map((a) => ACTION_WORDS[a]).join(', ')}: a request is waiting for the application; its form comes
              back once the application has settled it.
            </p>
          )}
          {p.failed && !waiting('retry') && (
            <RequestForm executionId={p.executionId} csrf={p.who.csrf} action="retry" label="Retry run">
              <p>Run it again from its failed step, on a machine of the application.</p>
            </RequestForm>
          )}
          {p.stale && !waiting('recover') && (
            <RequestForm executionId={p.executionId} csrf={p.who.csrf} action="recover" label="Recover run">
              <p>Its runner stopped renewing its hold: a machine of the application takes it over and goes on.</p>
            </RequestForm>
          )}
          {p.forkSeq !== null && !waiting('fork') && (
            <RequestForm executionId={p.executionId} csrf={p.who.csrf} action="fork" label="Fork from this row">
              <label for="fork-seq">
                Row to branch a new run from (its # in the timeline)
                <input
                  id="fork-seq"
                  name="seq"
                  type="number"
                  min="0"
                  max={String(p.forkSeq)}
                  value={String(p.forkSeq)}
                />
              </label>
            </RequestForm>
          )}
        </>
      )}
    </section>
  );
};

/** The requests part of a run's page (run page props as the shared page gets them). */
export async function requestsPart(db: PlaneDb, c: Context<PlaneEnv>, props: RunPageProps) {
  const e = props.execution;
  const requests = await requestsOfRun(db, c.get('principal').projectId, e.executionId);
  const hold = holdOf(e, { lostAtPlane: !!e.lostAtPlane });
  const ended = e.status === 'completed' || e.status === 'failed' || e.status === 'cancelled';
  // the newest step (an ended run's last row is its end marker, no step to fork from)
  const forkSeq = ended ? (e.lastSeq >= 1 ? e.lastSeq - 1 : null) : e.lastSeq >= 0 ? e.lastSeq : null;
  return (
    <RequestsSection
      executionId={e.executionId}
      requests={requests}
      who={asker(c)}
      failed={e.status === 'failed'}
      stale={recoverable(hold)}
      forkSeq={forkSeq}
      lastSeq={e.lastSeq}
    />
  );
}

const STATUS: Record<string, 400 | 403 | 404 | 409> = {
  [ErrorCode.INVALID_RUN_REQUEST]: 400,
  [ErrorCode.CSRF_FAILED]: 403,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.EXECUTION_NOT_FOUND]: 404,
};

/** The request body a form posts (`seq` of a fork resolved to its row's id), or every problem of the form. */
async function requestOfForm(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  form: Record<string, unknown>,
): Promise<{ body: Record<string, unknown> } | { problems: string[] }> {
  const problems: string[] = [];
  for (const k of Object.keys(form))
    if (!['csrf', 'action', 'seq', 'reason'].includes(k)) problems.push(`unknown field '${k.slice(0, 40)}'`);
  const { action, seq, reason } = form;
  if (typeof action !== 'string' || !['retry', 'recover', 'fork'].includes(action))
    problems.push('action: must be retry, recover or fork');
  if (reason !== undefined && typeof reason !== 'string') problems.push('reason: must be text');
  const body: Record<string, unknown> = { action };
  if (typeof reason === 'string' && reason.trim()) body.reason = reason;
  if (action === 'fork') {
    const n = typeof seq === 'string' && /^\d{1,9}$/.test(seq) ? Number(seq) : null;
    if (n === null) problems.push('seq: the row to fork from, a whole number');
    else {
      const [row] = await db
        .select({ id: checkpoints.id })
        .from(checkpoints)
        .where(
          and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId), eq(checkpoints.seq, n)),
        );
      // a row not in the run: the plane's own check names it (NOT_FORKABLE)
      body.checkpointId = row?.id ?? `#${n}`;
    }
  } else if (seq !== undefined && seq !== '') problems.push(`seq: only a fork names a row`);
  return problems.length ? { problems } : { body };
}

/** Mount `POST /runs/:id/requests` (after `viewer`); `wrap` frames its pages as every other page of the plane's. */
export function mountRequests(
  app: Hono<PlaneEnv>,
  db: PlaneDb,
  viewer: MiddlewareHandler<PlaneEnv>,
  wrap: (page: Page, c: Context<PlaneEnv>) => Page,
): void {
  app.post('/runs/:id/requests', viewer, async (c) => {
    const id = c.req.param('id');
    const refuse = (code: string, message: string, run: string | null = id) =>
      c.html(
        wrap(<RunActionRefusedPage title="Nothing asked" code={code} message={message} executionId={run} />, c),
        STATUS[code] ?? 409,
      );
    const form = await c.req.parseBody();
    const refusal = formRefusal(c, form, asker(c));
    if (refusal) return refuse(refusal.code, refusal.message);
    if (!ExecutionId.safeParse(id).success)
      return refuse(ErrorCode.EXECUTION_NOT_FOUND, `no run '${id}' in this project`, null);
    const p = c.get('principal');
    const parsed = await requestOfForm(db, p.projectId, id, form);
    if ('problems' in parsed)
      return refuse(ErrorCode.INVALID_RUN_REQUEST, `nothing was recorded: ${parsed.problems.join('; ')}`);
    try {
      const r = await recordRequest(db, p.projectId, id, parsed.body, {
        name: await keyName(db, p.keyId),
        keyId: p.keyId,
      });
      c.get('log').info(
        { executionId: id, requestId: r.requestId, action: r.action, requestedBy: r.requestedBy },
        'run request recorded (inspector)',
      );
    } catch (e) {
      if (e instanceof HttpError)
        return refuse(e.code, e.message, e.code === ErrorCode.EXECUTION_NOT_FOUND ? null : id);
      throw e;
    }
    return c.redirect(`/runs/${encodeURIComponent(id)}#requests-h`, 303);
  });
}
