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
import { executionNotFound, Refusal, refusal } from '../http/errors.js';
import { movedPast, recordRequest, requestBodyProblems, requestsOfRun, waitingActions } from '../requests.js';
import { LiveRegion, Time, Writer } from '../../inspector/layout.js';
import type { RunPageProps } from '../../inspector/run-page.js';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import type { RunRequestView } from '../../shared/protocol.js';
import { ExecutionId } from '../../shared/rows.js';
import { hasEnded, holdOf, recoverable } from '../../support/run-words.js';
import { formRefusal, refusalPage, runLinks, sessionMay } from './run-form.js';

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
      {movedPast(r, lastSeq) && `; the run has moved past #${r.checkpointSeq} meanwhile`}
    </span>
  );
};

/** The run's requests (a page of them) and, for an operate session, the forms that fit the run's state. */
const RequestsSection: FC<{
  executionId: string;
  requests: RunRequestView[];
  /** Links to the older requests, and back to the newest (null: none; this is the newest page). */
  older: string | null;
  newest: string | null;
  who: { csrf: string } | { refused: string };
  /** Whether each action's form fits the run (a failed run is retried, a stale one recovered, a step forked from). */
  fits: Record<RunRequestView['action'], boolean>;
  /** The actions a request waits for (plane/requests.ts `waitingActions`): a second is not offered. */
  waiting: ReadonlySet<RunRequestView['action']>;
  forkSeq: number | null;
  lastSeq: number;
}> = (p) => {
  // a second open request of the run and action is refused: its form waits until the first is settled
  const offered = (a: RunRequestView['action']) => p.fits[a] && !p.waiting.has(a);
  const held = (['retry', 'recover', 'fork'] as const).filter((a) => p.fits[a] && p.waiting.has(a));
  return (
    <section aria-labelledby="requests-h" data-testid="run-requests">
      <h2 id="requests-h">Ask the application</h2>
      <p class="muted">
        The plane records the request; the application&rsquo;s worker (serveDecisions, which has the agents and their
        tools) applies it and reports back here. The plane never runs a step.
      </p>
      {p.newest && (
        <p data-testid="requests-older-page">
          Older requests of this run. <a href={p.newest}>Newest requests</a>
        </p>
      )}
      <LiveRegion name="run requests">
        {p.requests.length > 0 && (
          <ul data-testid="request-list">
            {p.requests.map((r) => (
              <li data-testid="request" data-action={r.action} data-state={r.state} data-seq={String(r.seq)}>
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
      {p.older && (
        <p>
          <a href={p.older} data-testid="requests-older">
            Older requests
          </a>
        </p>
      )}
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
          {offered('retry') && (
            <RequestForm executionId={p.executionId} csrf={p.who.csrf} action="retry" label="Retry run">
              <p>Run it again from its failed step, on a machine of the application.</p>
            </RequestForm>
          )}
          {offered('recover') && (
            <RequestForm executionId={p.executionId} csrf={p.who.csrf} action="recover" label="Recover run">
              <p>Its runner stopped renewing its hold: a machine of the application takes it over and goes on.</p>
            </RequestForm>
          )}
          {p.forkSeq !== null && offered('fork') && (
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

/** The run page's query parameter that pages its requests (a cursor `requestsOfRun` gave). */
export const REQUESTS_BEFORE = 'requests_before';

/**
 * The requests part of a run's page (the run as the shared page gets it): a page of the run's requests,
 * newest first (`?requests_before=` pages on to older ones), and the forms. A cursor this plane did not issue is
 * thrown (BAD_CURSOR): the page answers 400.
 */
export async function requestsPart(db: PlaneDb, c: Context<PlaneEnv>, e: RunPageProps['execution']) {
  const projectId = c.get('principal').projectId;
  const before = c.req.query(REQUESTS_BEFORE) || undefined;
  const page = await requestsOfRun(db, projectId, e.executionId, { before });
  const who = asker(c);
  // only a session that is offered forms needs to know which wait (the list's page may not show them)
  const waiting = 'csrf' in who ? await waitingActions(db, projectId, e.executionId, e.lastSeq) : new Set<never>();
  const hold = holdOf(e, { lostAtPlane: !!e.lostAtPlane });
  // the newest step (an ended run's last row is its end marker, no step to fork from)
  const forkSeq = hasEnded(e.status) ? (e.lastSeq >= 1 ? e.lastSeq - 1 : null) : e.lastSeq >= 0 ? e.lastSeq : null;
  // this page's address with the requests' cursor changed, every other parameter kept
  const here = (cursor: string | null) => {
    const q = new URLSearchParams(c.req.query());
    if (cursor) q.set(REQUESTS_BEFORE, cursor);
    else q.delete(REQUESTS_BEFORE);
    return `/runs/${encodeURIComponent(e.executionId)}${q.size ? `?${q}` : ''}#requests-h`;
  };
  return (
    <RequestsSection
      executionId={e.executionId}
      requests={page.items}
      older={page.olderCursor && here(page.olderCursor)}
      newest={before ? here(null) : null}
      who={who}
      fits={{ retry: e.status === 'failed', recover: recoverable(hold), fork: forkSeq !== null }}
      waiting={waiting}
      forkSeq={forkSeq}
      lastSeq={e.lastSeq}
    />
  );
}

/**
 * The request body a form posts, or every problem of the form. The body is checked by the API's own rule
 * (plane/requests.ts `requestBodyProblems`): the form's fields are the body's (an unknown one is named by that
 * check), but for `csrf` (the guard's) and `seq`, the row a fork branches from by its # in the timeline, which
 * stands for the body's `checkpointId` (the rule names it `seq` in its problems; resolved to the row's id; a row
 * not in the run is left for the plane's own check, NOT_FORKABLE).
 */
async function requestOfForm(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  form: Record<string, unknown>,
): Promise<{ body: Record<string, unknown> } | { problems: string[] }> {
  const { csrf: _guard, seq, ...fields } = form;
  const body: Record<string, unknown> = { ...fields };
  const problems: string[] = [];
  const given = seq !== undefined && seq !== '';
  const n = typeof seq === 'string' && /^\d{1,9}$/.test(seq) ? Number(seq) : null;
  if (given && n === null) problems.push("seq: the row's # in the timeline, a whole number");
  // a row named: the body's checkpointId, its id once the body is known good
  if (given) body.checkpointId = `#${n ?? ''}`;
  problems.push(...requestBodyProblems(body, { checkpointId: 'seq' }));
  if (problems.length) return { problems };
  if (n !== null) {
    const [row] = await db
      .select({ id: checkpoints.id })
      .from(checkpoints)
      .where(
        and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId), eq(checkpoints.seq, n)),
      );
    body.checkpointId = row?.id ?? `#${n}`;
  }
  return { body };
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
    const refuse = (r: Refusal, run: string | null = id) =>
      refusalPage(c, r, runLinks(run), { title: 'Nothing asked', wrap });
    const form = await c.req.parseBody();
    const guarded = formRefusal(c, form, asker(c));
    if (guarded) return refuse(guarded);
    if (!ExecutionId.safeParse(id).success) return refuse(executionNotFound(id), null);
    const p = c.get('principal');
    const parsed = await requestOfForm(db, p.projectId, id, form);
    if ('problems' in parsed)
      return refuse(refusal(ErrorCode.INVALID_RUN_REQUEST, `nothing was recorded: ${parsed.problems.join('; ')}`));
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
      if (e instanceof Refusal) return refuse(e, e.code === ErrorCode.EXECUTION_NOT_FOUND ? null : id);
      throw e;
    }
    return c.redirect(`/runs/${encodeURIComponent(id)}#requests-h`, 303);
  });
}
