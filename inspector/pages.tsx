/** @jsxImportSource hono/jsx */
/**
 * The inspector's read pages, over any `InspectorSource` (source.ts): the run
 * list, a run's page (pause, timeline, state diff, idempotency, quarantine),
 * the quarantine and, where the source has one, the outbox's sync status; and
 * the static scripts and icon they load. The plane mounts them behind its
 * login (plane/ui/routes.tsx); `waymark ui` mounts them over a local store
 * (client/ui/serve.tsx). Nothing here imports a database: a source does the reads.
 *
 * `inspectorHeaders()` is the one CSP and set of secure headers of both: no
 * inline script, static scripts of our own only (local times, /ui/local-time.js;
 * keyboard shortcuts, /ui/shortcuts.js; on a page opened with `?live=1`, live
 * updates in place, /ui/live.js), and every page works without them; one
 * stylesheet, inline and allowed by its hash.
 */
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';
import type { HtmlEscapedString } from 'hono/utils/html';
import { secureHeaders } from 'hono/secure-headers';
import { ErrorCode, hasCode } from '../shared/errors.js';
import { describeHoles } from '../support/holes.js';
import { readableGraphState } from '../support/langgraph.js';
import type { Prices } from '../support/prices.js';
import { oneOfProblem } from '../support/validate.js';
import { type ApprovalOptions, mountApprovals, RunApprovals } from './approvals.js';
import { PauseAnswer } from './pause-answer.js';
import { pauseStand } from '../support/run-words.js';
import { diffStates } from './diff.js';
import { LIVE_JS } from './live.js';
import { LOCAL_TIME_JS } from './local-time.js';
import { SHORTCUTS_JS } from './shortcuts.js';
import { NotFoundPage } from './not-found-page.js';
import { BadCursorPage, RefusedPage } from './refused-page.js';
import { QuarantinePage } from './quarantine-page.js';
import { readRowDetail } from './row-detail.js';
import { RowPage } from './row-page.js';
import { RunPage, type RunPageRest } from './run-page.js';
import { StatePage } from './state-page.js';
import { deferral, sendInTwo } from './stream-page.js';
import { agentPathsOf } from './timeline.js';
import { readTimeline, TIMELINE_PARAMS, timelineQuery } from './timeline-read.js';
import { ATTENTION_PAUSED_MS, RUN_STATUSES, RunsPage, SINCE_WINDOWS, type RunsFilters } from './runs-page.js';
import type { Hole, InspectorSource } from './source.js';
import { STYLE_SOURCE } from './style.js';
import { SyncPage } from './sync-page.js';

/**
 * Idempotency entries on one run page: each carries its whole result (folded), the section is
 * below the timeline, and a run page stays under 100 kB; the rest are a page away, by key.
 */
const IDEMPOTENCY_PAGE = 20;

/**
 * The inspector's Content-Security-Policy and secure headers, for every page
 * and asset; a response that sets no cache-control of its own (every page but
 * the static assets) is `no-store`: a page shows a run's content, and after
 * logout the Back button must not bring it back from the browser's cache.
 */
export function inspectorHeaders(): MiddlewareHandler {
  const secure = secureHeaders(SECURE_HEADERS);
  return async (c, next) => {
    await secure(c, async () => {
      await next();
      if (!c.res.headers.has('cache-control')) c.header('cache-control', 'no-store');
    });
  };
}

const SECURE_HEADERS: Parameters<typeof secureHeaders>[0] = {
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    // the one stylesheet, inline in each page's head (style.ts), by its hash
    styleSrc: [STYLE_SOURCE],
    // static scripts of our own (local times, keyboard shortcuts, live updates); no inline scripts
    scriptSrc: ["'self'"],
    // the live pages fetch their own page again (live.js); nothing else is fetched from a script
    connectSrc: ["'self'"],
    imgSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  referrerPolicy: 'no-referrer',
};

/** A waymark: a pin on a path (the tab's icon; /favicon.ico too, for browsers that ask for it anyway). */
const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 1a5 5 0 0 0-5 5c0 4 5 9 5 9s5-5 5-9a5 5 0 0 0-5-5z" fill="#0550ae"/><circle cx="8" cy="6" r="2" fill="#fff"/></svg>';

/** The static scripts, style and icon the pages load (/ui/local-time.js, /ui/live.js, /ui/shortcuts.js, /ui/icon.svg). */
export function mountAssets<E extends Env>(app: Hono<E>): void {
  for (const [path, script] of [
    ['/ui/local-time.js', LOCAL_TIME_JS],
    ['/ui/live.js', LIVE_JS],
    ['/ui/shortcuts.js', SHORTCUTS_JS],
  ]) {
    app.get(path, (c) => {
      c.header('content-type', 'text/javascript; charset=utf-8');
      c.header('cache-control', 'public, max-age=300');
      return c.body(script);
    });
  }
  for (const path of ['/ui/icon.svg', '/favicon.ico']) {
    app.get(path, (c) => {
      c.header('content-type', 'image/svg+xml');
      c.header('cache-control', 'public, max-age=86400');
      return c.body(ICON_SVG);
    });
  }
}

/** A rendered page, as a JSX expression evaluates. */
type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

export interface PagesOptions<E extends Env> {
  /** Runs before each page (the plane's login check); it may answer instead. */
  viewer: MiddlewareHandler<E>;
  /** The source a request reads (the plane's: of the session's project). */
  source: (c: Context<E>) => InspectorSource;
  /** Wrap each rendered page (the local UI sets its frame here); default: as is. */
  wrap?: (page: Page, c: Context<E>) => Page;
  /** How a run the source lacks is explained on its 404 page. */
  missingRun: (id: string) => string;
  /** Where this source's copy is, in the words of a decode error ("this plane's copy"). */
  copyName: string;
  /** Mount `/sync`, the outbox's sync status (a local store's; the source must have `syncStatus`). */
  sync?: boolean;
  /** Model prices: the run list's Cost column and a run's cost on its page (absent or null: no cost shown). */
  prices?: Prices | null;
  /** Who may decide and the forms' CSRF token: mounts `/approvals` and the run page's form (approvals.tsx) where the source has them. */
  approvals?: ApprovalOptions<E>;
  /**
   * Query parameters of the parts `wrap` adds to a run's page (the plane's requests' page): its links keep them too,
   * and a run's page that names one is read whole before its status is sent (a cursor there that is not one the
   * source issued is a 400), as one that names its idempotency entries' page.
   */
  runPageParams?: readonly string[];
  /**
   * Told of an error that happened after a run's page sent its first bytes (its summary goes first, the rest as
   * read: stream-page.ts): the status is sent already, so the page says where it stopped; absent: not reported.
   */
  onStreamError?: (e: unknown, c: Context<E>) => void;
}

/** The run list's filters from the query; every problem named (a filter the form cannot send is a mistake to say, not to drop). */
function runsFilters(q: Record<string, string>): RunsFilters | { problems: string[] } {
  const problems: string[] = [];
  for (const problem of [
    q.status ? oneOfProblem('status', q.status, RUN_STATUSES) : null,
    q.since ? oneOfProblem('since', q.since, Object.keys(SINCE_WINDOWS)) : null,
    q.attention ? oneOfProblem('attention', q.attention, ['1']) : null,
  ])
    if (problem) problems.push(problem);
  if (problems.length) return { problems };
  return {
    status: q.status || undefined,
    writer: q.writer || undefined,
    q: q.q || undefined,
    agent: q.agent?.trim() || undefined,
    error: q.error?.trim() || undefined,
    since: q.since || undefined,
    attention: q.attention || undefined,
  };
}

/** Mount `/`, `/runs/:id`, `/runs/:id/rows/:seq`, `/runs/:id/state`, `/quarantine` and (with `sync`) `/sync` on `app`. */
export function mountPages<E extends Env>(app: Hono<E>, o: PagesOptions<E>): void {
  /**
   * The readable state of row `seq` (null: no such row). A stored run is always shown: a row whose chain does not
   * decode here (a hole before it) is named, never a 500.
   */
  const decode = async (
    src: InspectorSource,
    id: string,
    seq: number,
    holes: Hole[],
  ): Promise<{ state: ReturnType<typeof readableGraphState> | null } | { error: string }> => {
    try {
      const state = await src.stateAt(id, seq);
      return { state: state && readableGraphState(state) };
    } catch (e) {
      if (!hasCode(e, ErrorCode.CORRUPT_ROW)) throw e;
      return {
        error: `seq ${seq} cannot be decoded from ${o.copyName}${holes.length ? ` (incomplete: ${describeHoles(holes)})` : ''}: ${(e as Error).message}`,
      };
    }
  };
  const wrap = (p: Page, c: unknown) => (o.wrap ? o.wrap(p, c as Context<E>) : p);
  // hono's handler context is its own narrowing of E; it is the same request context
  const source = (c: unknown) => o.source(c as Context<E>);
  /** A cursor the source did not issue: 400 naming it, in the page's frame, not a 500. */
  const handleCursor = async (c: Context, fn: () => Promise<Response>): Promise<Response> => {
    try {
      return await fn();
    } catch (e) {
      if (hasCode(e, ErrorCode.BAD_CURSOR)) return c.html(wrap(<BadCursorPage />, c), 400);
      throw e;
    }
  };

  app.get('/', o.viewer, (c) =>
    handleCursor(c, async () => {
      const q = c.req.query();
      const filters = runsFilters(q);
      if ('problems' in filters)
        return c.html(wrap(<RefusedPage code={ErrorCode.INVALID_REQUEST} problems={filters.problems} />, c), 400);
      const live = q.live === '1';
      const updatedSince = filters.since
        ? new Date(Date.now() - SINCE_WINDOWS[filters.since]).toISOString()
        : undefined;
      const page = await source(c).listRuns({
        status: filters.status,
        writer: filters.writer,
        q: filters.q,
        agent: filters.agent,
        errorCode: filters.error,
        updatedSince,
        attention: filters.attention
          ? { pausedBefore: new Date(Date.now() - ATTENTION_PAUSED_MS).toISOString() }
          : undefined,
        cursor: q.cursor || undefined,
        limit: 50,
      });
      const query = (cursor: string | null, on = live) => {
        const u = new URLSearchParams(
          Object.entries({ ...filters, ...(cursor ? { cursor } : {}), ...(on ? { live: '1' } : {}) }).filter(
            ([, v]) => v,
          ) as [string, string][],
        );
        return `/?${u}`;
      };
      return c.html(
        wrap(
          <RunsPage
            items={page.items}
            count={page.count}
            next={page.nextCursor}
            first={!q.cursor}
            live={live}
            filters={filters}
            query={query}
            prices={o.prices}
          />,
          c,
        ),
      );
    }),
  );

  app.get('/runs/:id', o.viewer, (c) =>
    handleCursor(c, async () => {
      const src = source(c);
      const id = c.req.param('id');
      const execution = await src.getRun(id);
      if (!execution) return c.html(wrap(<NotFoundPage what={o.missingRun(id)} />, c), 404);
      const t = timelineQuery(c.req.query());
      if ('problems' in t)
        return c.html(wrap(<RefusedPage code={ErrorCode.INVALID_REQUEST} problems={t.problems} />, c), 400);
      // a link to this page with one of its parameters changed, the others kept (the timeline's page and filter, the
      // diff, the idempotency entries' page, live updates): paging one part does not reset the others
      const here = (change: Record<string, string | null>, anchor = '') => {
        const q = new URLSearchParams();
        for (const k of [...TIMELINE_PARAMS, 'a', 'b', 'idem', 'live', ...(o.runPageParams ?? [])]) {
          const v = k in change ? change[k] : (c.req.query(k) ?? null);
          if (v) q.set(k, v);
        }
        const text = q.toString();
        return `/runs/${encodeURIComponent(id)}${text ? `?${text}` : ''}${anchor}`;
      };
      // "go to seq": the rows around it, every row (a filter may hide it), scrolled to it
      if (t.jump !== undefined)
        return c.redirect(
          here({ seq: String(t.jump), from: null, before: null, step: null, agent: null }, `#seq-${t.jump}`),
          303,
        );
      const last = execution.lastSeq;
      // a seq beyond the safe integers is no seq of any run: the default, never a store error
      const num = (v: string | undefined, d: number) =>
        v !== undefined && /^\d+$/.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : d;
      const b = num(c.req.query('b'), last);
      const a = num(c.req.query('a'), Math.max(0, b - 1));
      const idemCursor = c.req.query('idem') || undefined;
      /** The page after its summary: read once the summary is sent. */
      const rest = async (): Promise<RunPageRest> => {
        let result = null;
        let error: string | undefined;
        const holes = (await src.listHoles?.(id)) ?? [];
        const decoded = async (seq: number) => {
          const d = await decode(src, id, seq, holes);
          if ('error' in d) error ??= d.error;
          return 'error' in d ? undefined : d.state;
        };
        const sa = await decoded(a);
        const sb = await decoded(b);
        if (sa && sb) result = diffStates(sa, sb);
        else if (sa === null || sb === null) error = `seq ${sa === null ? a : b} is not a row of this run`;
        const timeline = await readTimeline(src, id, last, holes, t, (change) => here(change, '#timeline-h'));
        const quarantined = (await src.listQuarantine({ executionId: id, limit: 100 })).items;
        // a run may record many large effect results: a page of them, by key (bytes bound it too on the plane)
        const idempotency = await src.listIdempotency(id, { cursor: idemCursor, limit: IDEMPOTENCY_PAGE });
        const pause = await src.pauseState(id);
        const decisions = src.runDecisions ? await src.runDecisions(id) : [];
        // an open pause with a decision waiting for a worker: decided, not yet applied
        const pauseDecided =
          pause?.state === 'open' &&
          decisions.some((d) => d.checkpointId === pause.pending.checkpointId && d.state === 'pending');
        // a resumed pause: what it was answered (the decision applied with it, else its claim row's answer)
        const pauseAnswer =
          pause && pauseStand(pause, false) === 'resumed' ? (
            <PauseAnswer
              decision={
                decisions.find((d) => d.checkpointId === pause.pending.checkpointId && d.state === 'applied') ?? null
              }
              answer={pause.answer}
              by={pause.claimedBy}
              at={pause.claimedAt}
            />
          ) : null;
        let approvals = null;
        if (o.approvals && src.runDecisions) {
          // a LangGraph interrupt is answered by invoking the graph again, not by a decision: no form
          const open =
            pause?.state === 'open' &&
            !pause.graph &&
            !decisions.some((d) => d.checkpointId === pause.pending.checkpointId)
              ? pause.pending.checkpointId
              : null;
          const who = open && src.recordDecision ? await o.approvals.decider(c as unknown as Context<E>) : null;
          // the page is no-store as every page is (inspectorHeaders): its form's token is not kept by a cache
          const form =
            open && who && 'by' in who
              ? { checkpointId: open, csrf: o.approvals.csrf(c as unknown as Context<E>) }
              : null;
          if (decisions.length || open)
            approvals = (
              <RunApprovals
                executionId={id}
                decisions={decisions}
                form={form}
                why={who && 'refused' in who ? who.refused : null}
              />
            );
        }
        return {
          holes,
          timeline,
          filter: { step: t.step, agent: t.agent },
          agentPaths: agentPathsOf(timeline.rows),
          pause,
          pauseDecided,
          pauseAnswer,
          approvals,
          idempotency: idempotency.items,
          idempotencyNext: idempotency.nextCursor && here({ idem: idempotency.nextCursor }, '#idem-h'),
          idempotencyFirst: idemCursor ? here({ idem: null }, '#idem-h') : null,
          conflicts: await src.listClaimConflicts?.(id),
          takeovers: await src.listTakeovers?.(id),
          quarantined,
          diff: { a, b, result, error },
          state: sb ?? null,
          ...(await src.forkLinks(id)),
        };
      };
      const slot = deferral();
      return sendInTwo(
        c,
        wrap(
          <RunPage
            execution={execution}
            here={here}
            live={c.req.query('live') === '1'}
            usage={await src.runUsage(id)}
            prices={o.prices}
            rest={rest}
            slot={slot}
          />,
          c,
        ),
        slot,
        {
          // a page of a part by its cursor is read whole before its status: a cursor the source did not issue is a 400
          whole: ['idem', ...(o.runPageParams ?? [])].some((k) => c.req.query(k)),
          onError: o.onStreamError && ((e) => o.onStreamError!(e, c as unknown as Context<E>)),
        },
      );
    }),
  );

  // one row of the timeline: what its call did (the reply, the tool's result, tokens, latency), read only here
  app.get('/runs/:id/rows/:seq', o.viewer, async (c) => {
    const src = source(c);
    const id = c.req.param('id');
    const execution = await src.getRun(id);
    if (!execution) return c.html(wrap(<NotFoundPage what={o.missingRun(id)} />, c), 404);
    const q = timelineQuery({ seq: c.req.param('seq') });
    if ('problems' in q)
      return c.html(wrap(<RefusedPage code={ErrorCode.INVALID_REQUEST} problems={q.problems} />, c), 400);
    const detail = await readRowDetail(src, id, q.seq!);
    if (!detail) return c.html(wrap(<NotFoundPage what={`Run ${id} has no row #${q.seq}.`} />, c), 404);
    return c.html(wrap(<RowPage executionId={id} detail={detail} lastSeq={execution.lastSeq} />, c));
  });

  // a row's whole state, its conversation paged (the run page shows its newest messages only)
  app.get('/runs/:id/state', o.viewer, async (c) => {
    const src = source(c);
    const id = c.req.param('id');
    const execution = await src.getRun(id);
    if (!execution) return c.html(wrap(<NotFoundPage what={o.missingRun(id)} />, c), 404);
    const q = timelineQuery({ seq: c.req.query('seq') ?? '', from: c.req.query('from') ?? '' });
    if ('problems' in q)
      return c.html(wrap(<RefusedPage code={ErrorCode.INVALID_REQUEST} problems={q.problems} />, c), 400);
    const seq = q.seq ?? execution.lastSeq;
    const d = await decode(src, id, seq, (await src.listHoles?.(id)) ?? []);
    if ('state' in d && d.state === null)
      return c.html(wrap(<NotFoundPage what={`Run ${id} has no row #${seq}.`} />, c), 404);
    return c.html(
      wrap(
        <StatePage
          executionId={id}
          seq={seq}
          state={'state' in d ? d.state : null}
          error={'error' in d ? d.error : null}
          from={q.from ?? null}
        />,
        c,
      ),
    );
  });

  app.get('/quarantine', o.viewer, (c) =>
    handleCursor(c, async () => {
      const page = await source(c).listQuarantine({ cursor: c.req.query('cursor') || undefined, limit: 50 });
      return c.html(wrap(<QuarantinePage items={page.items} next={page.nextCursor} />, c));
    }),
  );

  if (o.approvals)
    mountApprovals(app, { viewer: o.viewer, source: o.source, wrap: o.wrap ?? ((p) => p), approvals: o.approvals });

  if (o.sync) {
    app.get('/sync', o.viewer, async (c) => {
      const src = source(c);
      if (!src.syncStatus) return c.notFound();
      return c.html(wrap(<SyncPage s={await src.syncStatus()} />, c));
    });
  }
}
