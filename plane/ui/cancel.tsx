/** @jsxImportSource hono/jsx */
/**
 * Cancel from the inspector: on the page of a run that has not completed and
 * is not cancelled (running, paused, failed), a "Cancel run" form for a
 * session whose key has the `cancel` (or the `admin`) scope, the permission
 * `POST /v1/executions/:id/cancel` asks; a key without it sees why there is no form. The form posts to
 * `POST /runs/:id/cancel`, which cancels through `cancelAtPlane` (plane/cancel.ts),
 * the API's own code, then answers 303 to the run's page (a reload never posts
 * twice), which shows the run cancelled, the reason (the shared page's cancel
 * card), who cancelled it, the pause the cancel closed and the writer it stopped.
 *
 * The form is guarded as the approve/decline form is: the session's CSRF token
 * and Origin/Sec-Fetch-Site (inspector/csrf.ts), the scope checked again on the
 * post. One click cannot cancel: the form has a box to tick ("I understand…"),
 * which the browser requires before it submits (no script) and the plane
 * requires again (a post without it changes nothing). A refusal (bad token, no
 * scope, box not ticked, a completed run, a run not here) is a page naming the
 * stable code and saying nothing was changed.
 *
 * The run page itself is the shared one (inspector/run-page.tsx, also `waymark
 * ui`'s): the form goes into its slot under the pause (`approvals`, beside the
 * decisions), what the plane knows of a cancel into its cancel card
 * (`cancelDetail`), added when the plane's pages are wrapped (`withCancel`).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { cloneElement, isValidElement, type Child, type FC, type JSXNode } from 'hono/jsx';
import type { HtmlEscapedString } from 'hono/utils/html';
import { and, desc, eq } from 'drizzle-orm';
import { keyName } from '../auth.js';
import { cancelAsked, cancelBodyProblems } from '../cancel.js';
import { CancelRequest } from '../../shared/protocol.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints, claims, runOwners } from '../db/schema.js';
import type { PlaneEnv } from '../http/env.js';
import { Refusal, refusal } from '../http/errors.js';
import { Id, json, Layout, Time, Writer } from '../../inspector/layout.js';
import { RunPage, type RunPageProps, type RunPageRest } from '../../inspector/run-page.js';
import { ErrorCode } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import { LIMITS } from '../../shared/limits.js';
import type { Checkpoint } from '../../shared/rows.js';
import { requestsPart } from './requests.js';
import { formRefusal, refusalPage, runLinks, sessionMay } from './run-form.js';

type Page = HtmlEscapedString | Promise<HtmlEscapedString>;
type Takeover = NonNullable<RunPageRest['takeovers']>[number];

/** Run statuses a cancel does not apply to: a completed run is ALREADY_FINISHED, a cancelled one is cancelled already. */
const UNCANCELLABLE = new Set(['completed', 'cancelled']);

/** Whether this request may cancel (a session of a key with the cancel or the admin scope), and its form's token. */
export const canceller = (c: Context<PlaneEnv>) =>
  sessionMay(
    c,
    'cancel',
    "This session's key has no cancel scope: it sees this run but cannot cancel it (log in with a key that has the cancel or the admin scope).",
  );

/** The "Cancel run" form: a reason, and a box to tick before the browser (and the plane) lets it through. */
export const CancelForm: FC<{ executionId: string; csrf: string; paused: boolean }> = (p) => (
  <section aria-labelledby="cancel-h" data-testid="cancel-run">
    <h2 id="cancel-h">Cancel this run</h2>
    <form
      method="post"
      action={`/runs/${encodeURIComponent(p.executionId)}/cancel`}
      class="decide"
      data-testid="cancel-form"
    >
      <input type="hidden" name="csrf" value={p.csrf} />
      <label for="cancel-reason">
        Reason (kept with the cancel and shown on this page)
        <textarea id="cancel-reason" name="reason" rows={2} maxlength={LIMITS.reasonLength}></textarea>
      </label>
      <label for="cancel-confirm">
        {/* one line, the box before its words (a label lays its children out as a column) */}
        <span>
          <input type="checkbox" id="cancel-confirm" name="confirm" value="yes" required /> I understand: the runner
          stops at its next step
          {p.paused ? ', the open pause is closed unanswered' : ''} and a cancelled run cannot be resumed.
        </span>
      </label>
      <div class="buttons">
        <button type="submit" class="decline">
          Cancel run
        </button>
      </div>
      <p class="muted">
        The plane takes the run from its writer and ends its history here with a cancel marker; the machine running it
        learns of the cancel at its next contact with the plane and starts no further step.
      </p>
    </form>
  </section>
);

/** What the plane holds about a run's cancel: its marker and the pause it closed (null: none). */
interface CancelFacts {
  marker: Checkpoint;
  /** The name of the key that cancelled it at the plane (null: not known). */
  byKey: string | null;
  closedPause: {
    checkpointId: string;
    reason: string | null;
    context: Json | null;
    nodeId: string;
    /** A writer that had claimed the pause (to resume it) when the cancel came, its resume never reaching this plane. */
    claimedBy: string | null;
  } | null;
}

async function cancelFacts(db: PlaneDb, projectId: string, executionId: string): Promise<CancelFacts | null> {
  const run = and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId));
  const [end] = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(and(run, eq(checkpoints.step, 'run_end'), eq(checkpoints.status, 'cancelled')))
    .orderBy(desc(checkpoints.seq))
    .limit(1);
  if (!end) return null;
  const marker = end.row as Checkpoint;
  // the row the marker follows: a pause there was still open in this run's history when the cancel came, and the
  // cancel closed it (whoever claimed it meanwhile: a claim's resume is a row after the pause, and none came)
  const [before] = await db
    .select({ row: checkpoints.row, claimedBy: claims.writerId, source: claims.source })
    .from(checkpoints)
    .leftJoin(claims, and(eq(claims.projectId, checkpoints.projectId), eq(claims.checkpointId, checkpoints.id)))
    .where(and(run, eq(checkpoints.seq, marker.seq - 1)));
  const p = before?.row as Checkpoint | undefined;
  const [owner] = await db
    .select({ by: runOwners.cancelledBy })
    .from(runOwners)
    .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
  return {
    marker,
    byKey: owner?.by ?? null,
    closedPause:
      p && p.step === 'hitl_pause' && p.status === 'interrupted'
        ? {
            checkpointId: p.id,
            reason: p.interruptReason,
            context: p.interruptContext ?? null,
            nodeId: p.nodeId,
            claimedBy: before.claimedBy && before.source !== 'cancel' ? before.claimedBy : null,
          }
        : null,
  };
}

/** Who cancelled a cancelled run and where, the pause the cancel closed, the writer it stopped (the run page's cancel card adds the reason). */
export const CancelDetail: FC<{ executionId: string; facts: CancelFacts; stopped: Takeover[] }> = ({
  executionId,
  facts,
  stopped,
}) => {
  const m = facts.marker;
  const byPlane = m.writerId === 'plane';
  const closed = facts.closedPause;
  return (
    <>
      <p class="muted">
        {byPlane ? (
          facts.byKey !== null ? (
            <span data-testid="cancelled-by-key">
              Cancelled at the plane by key <strong>{facts.byKey}</strong>
            </span>
          ) : (
            'Cancelled at the plane'
          )
        ) : (
          <>
            Cancelled by writer <Writer id={m.writerId} />
          </>
        )}{' '}
        at <Time iso={m.createdAt} />: its cancel marker,{' '}
        <a href={`/runs/${encodeURIComponent(executionId)}#seq-${m.seq}`}>#{m.seq}</a>, ends the run&rsquo;s history; a
        copy restored from this plane ends with it.
      </p>
      {closed && (
        <div data-testid="cancel-closed-pause">
          <p>
            Its pause <strong>{closed.reason ?? '(no reason given)'}</strong> at{' '}
            <span class="mono">
              <Id id={closed.nodeId} />
            </span>{' '}
            was closed by the cancel, not answered: no decision applies to it any more, and a machine that tries to
            resume it is refused.
            {closed.claimedBy && (
              <>
                {' '}
                Writer <Writer id={closed.claimedBy} /> had claimed it to resume it, but no row of that resume reached
                this plane before the cancel.
              </>
            )}
          </p>
          {closed.context !== null && (
            <details>
              <summary>Context frozen at the pause</summary>
              <pre>{json(closed.context)}</pre>
            </details>
          )}
        </div>
      )}
      {stopped.map((t) => (
        <p data-testid="cancel-stopped">
          Writer <Writer id={t.loserWriterId} /> was running it: the plane refuses its rows after seq {t.fromSeq}, and
          the runner starts no further step once it hears of the cancel (at its next contact with the plane).
        </p>
      ))}
    </>
  );
};

/**
 * The rest of a run's page (read after its summary is sent) with the cancel form in its slot under the pause, or a
 * cancelled run's detail in its cancel card, and the run requests' forms and states after it (requests.tsx);
 * the cancel's own fence moves out of "Taken over" into that card.
 */
async function restWithCancel(
  db: PlaneDb,
  c: Context<PlaneEnv>,
  e: RunPageProps['execution'],
  r: RunPageRest,
): Promise<RunPageRest> {
  let part: Child = null;
  let detail: Child = null;
  let takeovers = r.takeovers;
  if (e.status === 'cancelled') {
    const facts = await cancelFacts(db, c.get('principal').projectId, e.executionId);
    if (facts) {
      // the cancel fenced the writer that held the run (cancelAtPlane: after the plane's newest row; ingest: a row
      // after the marker): that is no takeover by another machine, and it is said in the cancel's card instead
      const own = (t: Takeover) => t.winnerWriterId === facts.marker.writerId && t.fromSeq >= facts.marker.seq - 1;
      // one line a writer, at its first fence (a row it sent after the marker fences it again, later)
      const stopped = (takeovers ?? [])
        .filter(own)
        .filter((t, i, all) => all.findIndex((u) => u.loserWriterId === t.loserWriterId) === i);
      takeovers = (takeovers ?? []).filter((t) => !own(t));
      detail = <CancelDetail executionId={e.executionId} facts={facts} stopped={stopped} />;
    }
  } else if (!UNCANCELLABLE.has(e.status)) {
    const who = canceller(c);
    if ('refused' in who)
      part = (
        <p class="muted" data-testid="no-cancel">
          {who.refused}
        </p>
      );
    else part = <CancelForm executionId={e.executionId} csrf={who.csrf} paused={r.pause?.state === 'open'} />;
  }
  // the run requests' part (requests.tsx): its forms and where each request stands
  const asks = await requestsPart(db, c, e);
  return {
    ...r,
    approvals: (
      <>
        {r.approvals}
        {part}
        {asks}
      </>
    ),
    cancelDetail: detail,
    takeovers,
  };
}

/** A page of the plane's inspector, with the cancel part added to the rest of a run's page. */
export function withCancel(db: PlaneDb, page: Page, c: Context<PlaneEnv>): Page {
  if (!isValidElement(page) || (page as unknown as JSXNode).tag !== RunPage) return page;
  const props = (page as unknown as JSXNode).props as unknown as RunPageProps;
  const rest = async () => restWithCancel(db, c, props.execution, await props.rest());
  return cloneElement(page as unknown as JSXNode, { rest }) as unknown as Page;
}

/** A cancel that was not made: the stable code and why, and that nothing changed. */

/** A cancel that found the run cancelled already: the reason posted was not recorded. */
export const AlreadyCancelledPage: FC<{ executionId: string; seq: number }> = (p) => (
  <Layout title="Already cancelled">
    <h1>Already cancelled</h1>
    <p role="status" data-testid="already-cancelled">
      This run was already cancelled (its cancel marker is #{p.seq}): the reason you gave was not recorded, and nothing
      was changed.
    </p>
    <p>
      <a href={`/runs/${encodeURIComponent(p.executionId)}#cancel-h`}>Back to the run</a>
    </p>
  </Layout>
);

/**
 * The body a form posts, or every problem of the form. The form's fields are the API's body (CancelRequest),
 * checked by its rule (plane/cancel.ts `cancelBodyProblems`: an unknown field is named there), but for `csrf` (the
 * guard's) and `confirm`, the box the form asks to be ticked, which the API has no need of.
 */
function cancelForm(form: Record<string, unknown>): { body: CancelRequest } | { problems: string[] } {
  const { csrf: _guard, confirm, ...body } = form;
  const problems = [
    ...(confirm === 'yes'
      ? []
      : ['confirm: tick “I understand…” to cancel the run (one click on the button alone cancels nothing)']),
    ...cancelBodyProblems(body),
  ];
  if (problems.length) return { problems };
  return { body: CancelRequest.parse(body) };
}

/** Mount `POST /runs/:id/cancel` (after `viewer`); `wrap` frames its pages as every other page of the plane's. */
export function mountCancel(
  app: Hono<PlaneEnv>,
  db: PlaneDb,
  viewer: MiddlewareHandler<PlaneEnv>,
  wrap: (page: Page, c: Context<PlaneEnv>) => Page,
): void {
  app.post('/runs/:id/cancel', viewer, async (c) => {
    const id = c.req.param('id');
    const refuse = (r: Refusal, run: string | null = id) =>
      refusalPage(c, r, runLinks(run), { title: 'Run not cancelled', wrap });
    const form = await c.req.parseBody();
    const guarded = formRefusal(c, form, canceller(c));
    if (guarded) return refuse(guarded);
    const parsed = cancelForm(form);
    if ('problems' in parsed)
      return refuse(refusal(ErrorCode.INVALID_REQUEST, `the run was not cancelled: ${parsed.problems.join('; ')}`));
    const p = c.get('principal');
    const byName = await keyName(db, p.keyId);
    let r: Awaited<ReturnType<typeof cancelAsked>>;
    try {
      r = await cancelAsked(db, id, parsed.body, { projectId: p.projectId, keyId: p.keyId, keyName: byName });
    } catch (e) {
      if (e instanceof Refusal) return refuse(e, e.code === ErrorCode.EXECUTION_NOT_FOUND ? null : id);
      throw e;
    }
    if (r.alreadyCancelled) return c.html(wrap(<AlreadyCancelledPage executionId={id} seq={r.seq} />, c), 200);
    c.get('log').warn(
      { executionId: id, from: r.takenFrom, seq: r.seq, keyId: p.keyId, by: byName },
      'a run was cancelled at the plane (inspector)',
    );
    return c.redirect(`/runs/${encodeURIComponent(id)}#cancel-h`, 303);
  });
}
