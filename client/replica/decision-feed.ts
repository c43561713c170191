/**
 * The replica's decision feed: brings the decisions recorded on
 * the plane (its inspector, its API, other machines' local decisions) into
 * this store, promptly, so the application's decision worker can apply them.
 *
 * A long poll: GET /v1/decisions?after=<cursor>&wait=<s>. The plane answers
 * at once when decisions were recorded after the cursor, else holds the
 * request up to `wait` seconds and answers when one is recorded (or with an
 * empty page). Each decision is stored (source 'plane': no event goes back),
 * then the cursor is saved in the store's meta (`decisions.cursor <plane url>
 * <project>`, see decisionsCursorMeta): a client
 * that was offline or restarted asks from where it stopped and gets what it
 * missed. A crash between the two re-reads a page; storing is idempotent.
 *
 * A cursor belongs to one plane and one project (the key's, asked once from
 * GET /v1/whoami): a store connected to another plane or project starts that
 * feed from its beginning instead of from a cursor that means nothing there
 * (a cursor above the new feed would skip its decisions silently).
 *
 * Given a `writerId`, the feed is that writer's (GET /v1/writer-decisions:
 * the decisions of runs it delivered rows of, restored or owns, with the
 * project feed's cursor), kept under a cursor of its own (`decisions.writer
 * <plane url> <project> <writer>`): a whole-feed consumer never starts from a
 * cursor that passed over other writers' decisions; a writer's feed with no
 * cursor yet starts at the whole feed's, when the store has one. A plane
 * without the writer feed (404) is followed whole from then on, from the same
 * cursor (said once, `fellBack`).
 *
 * Only decisions still `pending` on the plane are stored, unless this store
 * holds their run: a decision applied or superseded elsewhere for a run this
 * machine never ran is no work of its own.
 *
 * One bad decision never stops the feed: the page's envelope (`items`,
 * `nextCursor`) is checked, then each item on its own; an item that fails
 * the shape or that the store refuses is reported (`skipped`, the replica's
 * `decision_skipped` event, with the decision id and the reason) and passed
 * over, and the cursor moves past it like past any other.
 *
 * While followed (`follow()`, reference counted: serveDecisions follows while
 * it serves), rounds run back to back; a failed round (offline, a refusal)
 * waits a full-jitter backoff before the next. `pull()` runs one round
 * without waiting (tests, a manual refresh).
 */
import { z } from 'zod';
import { DecisionView, WhoAmI } from '../../shared/protocol.js';
import type { Decision } from '../../shared/rows.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { oneOfProblem } from '../../support/validate.js';
import type { Checkpointer } from '../checkpointer.js';
import { FeedFollower, type FeedResponse, writerFeedMissing, zodIssues as issues } from './feed-follower.js';
import { PlaneHttp } from './http.js';
import type { Dispatcher } from 'undici';

/** The prefix of the store meta keys holding the feed's cursors (the plane's `nextCursor` of the last page stored). */
export const DECISIONS_CURSOR_META = 'decisions.cursor';

/** Whose decisions a feed serves: the project's every one, or one writer's (its runs). */
export type DecisionRuns = 'all' | 'mine';

/** The problem with a `runs` value (DecisionRuns), or null. */
export const decisionRunsProblem = (field: string, v: unknown): string | null =>
  oneOfProblem(field, v, ['all', 'mine']);

/** The prefix of the store meta keys holding writer decision feeds' cursors. */
export const WRITER_DECISIONS_CURSOR_META = 'decisions.writer';

/** The meta key of the feed cursor for one plane and project (and writer, for its own feed): a cursor is meaningful only there. */
export function decisionsCursorMeta(url: string, project: string, writerId?: string): string {
  const where = `${url.replace(/\/+$/, '')} ${project}`;
  return writerId === undefined
    ? `${DECISIONS_CURSOR_META} ${where}`
    : `${WRITER_DECISIONS_CURSOR_META} ${where} ${writerId}`;
}

/** The writer decision feed's path (the whole feed's is `/v1/decisions`). */
const WRITER_FEED = '/v1/writer-decisions';

export interface DecisionFeedOptions {
  url: string;
  /** Follow this writer's decisions only (GET /v1/writer-decisions); absent: the whole project's. */
  writerId?: string;
  /** Said once: the plane has no writer decision feed, the whole project's is followed instead. */
  fellBack?: (reason: string) => void;
  /** This store followed the whole decision feed before (a writer's feed found its cursor): it may keep decisions of runs it never touched. */
  followedWhole?: () => Promise<void>;
  dispatcher?: Dispatcher;
  /** The long poll's hold, seconds (the plane caps it at 25). Default 25. */
  waitSeconds?: number;
  pageSize?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** The plane refused the key for a followed round (see FeedSpec.keyRefused). */
  keyRefused?: (message: string, apiKey: string | null) => void;
}

/** The page's envelope; its items are checked one by one (a bad one is skipped, not the page). */
const FeedEnvelope = z.object({ items: z.array(z.unknown()), nextCursor: z.string() });

/** A decision the feed passed over: the plane sent it malformed, or the store refused it. */
export interface SkippedDecision {
  /** The decision's id, when the item carried one. */
  decisionId: string | null;
  executionId: string | null;
  reason: string;
  code: string | null;
}

/** Where the feed reports what it stored and what it skipped. */
export interface DecisionFeedSink {
  decision(d: Decision): void;
  skipped(s: SkippedDecision): void;
}

/** What one round brought. */
export interface PullResult {
  /** Decisions the plane sent. */
  received: number;
  /** Of those, decisions not stored: no longer pending on the plane, for a run this store does not hold. */
  ignored: number;
  /** Of those, decisions new to this store. */
  stored: number;
  /** Of those, decisions passed over (malformed, or refused by the store). */
  skipped: number;
  /** The store meta key the cursor is kept under (this plane and the key's project). */
  cursorKey: string;
  cursor: string | null;
}

/** Store refusals of one decision (the feed skips it); any other error (a store that is down) fails the round. */
const SKIPPABLE: ReadonlySet<string> = new Set([
  ErrorCode.INVALID_DECISION,
  ErrorCode.PAUSE_NOT_FOUND,
  ErrorCode.PAUSE_CLOSED,
  ErrorCode.CORRUPT_ROW,
]);

export class DecisionFeedConsumer {
  private readonly feed: FeedFollower<unknown, { stored: number; skipped: number; ignored: number }>;
  private readonly http: PlaneHttp;
  /** The cursor's meta key for the API key it was asked with (whoami names the project). */
  private scope: { apiKey: string; key: string } | null = null;
  /** The plane answered the writer feed 404: the whole project's feed is asked from then on. */
  private wholeFeed = false;

  constructor(
    private readonly store: Checkpointer,
    private readonly apiKey: () => string,
    private readonly sink: DecisionFeedSink,
    private readonly o: DecisionFeedOptions,
  ) {
    // its own connection: a held long poll never delays the drain's batches
    const http = new PlaneHttp(o.url, { dispatcher: o.dispatcher, connections: 1 });
    this.http = http;
    this.feed = new FeedFollower({
      name: 'decision feed',
      path: '/v1/decisions',
      page: FeedEnvelope,
      store,
      cursorKey: (signal) => this.cursorKey(signal),
      get: (path, timeoutMs, signal) => this.get(path, timeoutMs, signal),
      handle: (items) => this.handle(items),
      backoff: { baseMs: o.backoffBaseMs ?? 500, capMs: o.backoffCapMs ?? 30_000 },
      waitSeconds: o.waitSeconds,
      pageSize: o.pageSize,
      close: () => http.close(),
      keyRefused: o.keyRefused,
      apiKey,
    });
  }

  /** The last followed round's error, null after a round that succeeded. */
  get lastError(): string | null {
    return this.feed.lastError;
  }

  /** One round: ask for decisions after the saved cursor, holding up to `waitSeconds` (0: answer at once); store them; save the cursor. */
  async pull(waitSeconds = 0, signal?: AbortSignal): Promise<PullResult> {
    const r = await this.feed.pull(waitSeconds, signal);
    return { received: r.received, ...r.result, cursor: r.cursor, cursorKey: r.cursorKey };
  }

  /** One GET of the feed: the writer's when it has one and the plane serves it, else the whole project's. */
  private async get(path: string, timeoutMs: number, signal?: AbortSignal): Promise<FeedResponse> {
    // a feed read: sent again on a kept-alive connection the plane had closed (http.ts sendAgainIfStale)
    const send = (p: string) =>
      this.http.request('GET', p, { apiKey: this.apiKey(), timeoutMs, signal, sendAgainIfStale: true });
    const writerId = this.o.writerId;
    if (writerId === undefined || this.wholeFeed) return send(path);
    const res = await send(`${WRITER_FEED}${path.slice(path.indexOf('?'))}&writerId=${encodeURIComponent(writerId)}`);
    if (res.status !== 404) return res;
    this.wholeFeed = true;
    this.o.fellBack?.(writerFeedMissing(res, WRITER_FEED, 'writer decision feed', 'decision feed'));
    return send(path);
  }

  private async handle(items: unknown[]): Promise<{ stored: number; skipped: number; ignored: number }> {
    const n = { stored: 0, skipped: 0, ignored: 0 };
    for (const item of items) {
      const r = await this.storeOne(item);
      if (r !== 'known') n[r]++;
    }
    return n;
  }

  /** The meta key of this plane's and this key's project's cursor (asked once per API key). */
  private async cursorKey(signal?: AbortSignal): Promise<string> {
    const apiKey = this.apiKey();
    if (this.scope?.apiKey === apiKey) return this.scope.key;
    const res = await this.http.request('GET', '/v1/whoami', {
      apiKey,
      timeoutMs: 30_000,
      signal,
      sendAgainIfStale: true,
    });
    const who = WhoAmI.safeParse(res.body);
    if (res.status !== 200 || !who.success) {
      const err = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
      throw new WaymarkError(
        ErrorCode.PLANE_ERROR,
        `the plane did not say which project the key is for (GET /v1/whoami): ${res.status} ${err?.code ?? ''} ${err?.message ?? ''}`.trim(),
        {
          details: { status: res.status, planeCode: err?.code ?? null },
        },
      );
    }
    const key = decisionsCursorMeta(this.o.url, who.data.project, this.o.writerId);
    // a writer's feed first followed where the whole feed was: it starts at the whole feed's cursor, every decision
    // up to which this store was served
    if (this.o.writerId !== undefined && (await this.store.getMeta(key)) === null) {
      const whole = await this.store.getMeta(decisionsCursorMeta(this.o.url, who.data.project));
      if (whole !== null) {
        await this.o.followedWhole?.();
        await this.store.setMeta(key, whole);
      }
    }
    this.scope = { apiKey, key };
    return this.scope.key;
  }

  /** One item of a page: checked, stored (source 'plane': never sent back), or skipped with its reason. */
  private async storeOne(item: unknown): Promise<'stored' | 'known' | 'skipped' | 'ignored'> {
    const raw = (item && typeof item === 'object' ? item : {}) as { decisionId?: unknown; executionId?: unknown };
    const ids = {
      decisionId: typeof raw.decisionId === 'string' ? raw.decisionId : null,
      executionId: typeof raw.executionId === 'string' ? raw.executionId : null,
    };
    const v = DecisionView.safeParse(item);
    if (!v.success) {
      this.skip({ ...ids, reason: `malformed decision: ${issues(v.error)}`, code: ErrorCode.PLANE_ERROR });
      return 'skipped';
    }
    // already applied or superseded on the plane: kept only for a run this store holds (its worker reports it); for any
    // other run it is nothing to do here, and storing it would make a worker with `restore` restore a finished pause
    if (v.data.state !== 'pending' && !(await this.store.latest(v.data.executionId))) return 'ignored';
    const d: Decision = {
      decisionId: v.data.decisionId,
      executionId: v.data.executionId,
      checkpointId: v.data.checkpointId,
      approved: v.data.approved,
      metadata: v.data.metadata,
      decidedBy: v.data.decidedBy,
      source: 'plane',
      decidedAt: v.data.decidedAt,
    };
    try {
      const r = await this.store.recordDecision(d);
      if (!r.recorded) return 'known';
    } catch (e) {
      // a refusal of this decision (a conflicting one for its pause, bad content): skipped; a store that is down fails the round
      const code = (e as { code?: string })?.code ?? null;
      if (!code || !SKIPPABLE.has(code)) throw e;
      this.skip({ ...ids, reason: (e as Error).message, code });
      return 'skipped';
    }
    this.sink.decision(d);
    return 'stored';
  }

  private skip(s: SkippedDecision): void {
    try {
      this.sink.skipped(s);
    } catch {
      // a listener cannot stop the feed
    }
  }

  /** Follow the feed until the returned function is called (and every other follower stopped too). */
  follow(): () => void {
    return this.feed.follow();
  }

  /** Stop following, wait for the round in flight to end, close the connection. */
  stop(): Promise<void> {
    return this.feed.stop();
  }
}
