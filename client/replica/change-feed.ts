/**
 * The replica's change feed: a store connected to a plane
 * learns when a run it holds moved on elsewhere — claimed, cancelled,
 * finished or deleted on another machine — and pulls what it needs of that
 * run, so its listings, its Local UI and its decision worker see the truth.
 *
 * A long poll: GET /v1/writer-changes?writerId=<this writer>&after=<cursor>&wait=<s>,
 * the entries of the project's change feed this writer acts on
 * (plane/writer-changes.ts: runs it delivered rows of, restored or owns,
 * deletions, and, once the store follows its project's whole decision feed
 * (`askDecided`), runs with a decision at the plane), with the project feed's
 * cursor. A plane without it (an older one: 404) is asked the whole project's feed,
 * GET /v1/changes, from then on: said once (`fellBack`), the same cursor.
 * Each entry is one run where it stands on the plane now. For a run THIS
 * store holds (it has rows of it) and that another writer changed:
 *
 * - the plane holds rows past the local newest seq → caught up through
 *   restoreFromPlane's code path: the whole run verified, then imported only
 *   where it extends the local history (never overwriting a local row; the
 *   local pause that is no longer the newest row is removed). A local copy
 *   that diverged from the plane's is reported (`diverged`), unchanged;
 * - the plane's copy is no further along but its pause was claimed by
 *   another writer → reported (`claimed_elsewhere`): the rows follow when that
 *   writer syncs them; meanwhile a resume here loses the plane claim
 *   (AlreadyResumed naming the holder);
 * - the run was deleted on the plane by its owner → reported
 *   (`deleted_on_plane`); the local rows are kept. A deletion is an owner's
 *   act on their own copy; deleting here on a remote signal could destroy the
 *   only copy of rows the plane never got. `waymark delete` removes them here.
 *
 * Each outcome is emitted as `run_updated`. Runs this store does not hold,
 * and this writer's own changes, are left alone (no local read beyond a
 * lookup of the newest row), but for the decisions from the plane kept for a
 * run not held here: those whose pause the plane no longer holds open are
 * forgotten (forgetUnheldDecisions; see decidablePause), only those recorded
 * before the page was asked for (a decision the decision feed stored since,
 * for a pause that opened after the page was served, stays). The cursor is saved in store meta
 * (`changes.cursor`) after each page is handled, so a client that was offline
 * or restarted resumes from where it stopped; a crash mid-page handles the
 * page again (catching up is idempotent). Work per round is one page of
 * changes; each catch-up pages the run's rows.
 *
 * While followed the rounds run back to back; a failed round waits a
 * full-jitter backoff. The held request does not keep the process alive
 * (its socket is unref'd), like the drain's idle timer: a script that ends
 * without stop() is not held open by the feed.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { ErrorCode } from '../../shared/errors.js';
import { ChangeFeed, type ExecutionChange } from '../../shared/protocol.js';
import type { Checkpointer } from '../checkpointer.js';
import type { DivergedExecution } from '../store/import.js';
import { FeedFollower, writerFeedMissing } from './feed-follower.js';
import { closedBeforeAnswer, PlaneHttp, sendAgainIfStale, StaleConnection } from './http.js';
import { restoreFromPlane } from './restore.js';

/** The store meta key holding the change feed's cursor (the plane's `nextCursor` of the last page handled). */
export const CHANGES_CURSOR_META = 'changes.cursor';
/** The store meta key saying the store follows (or followed) the whole decision feed: its change feed asks for runs with a decision. */
export const CHANGES_DECIDED_META = 'changes.decided';

/** What a connected store learnt about a run it holds (`replica.on('run_updated', …)`). */
export type RunUpdate = {
  executionId: string;
  /** The plane's view when the change was read. */
  status: ExecutionChange['status'];
  planeSeq: number | null;
  /** The local newest seq before anything was done. */
  localSeq: number;
  /** Who made the change: the writer of the plane's newest row, or of the deletion. */
  by: string | null;
} & (
  | { outcome: 'caught_up'; inserted: number; stalePendingRemoved: { executionId: string; checkpointId: string }[] }
  | { outcome: 'diverged'; diverged: DivergedExecution[] }
  | { outcome: 'claimed_elsewhere'; checkpointId: string | null; claimedBy: string }
  | { outcome: 'deleted_on_plane' }
  /** The catch-up was refused for a reason a retry would not change (RUN_INCOMPLETE, RESTORE_UNVERIFIED, NOT_ON_PLANE); the cursor moves on. */
  | { outcome: 'failed'; code: string; message: string }
);

export interface ChangeFeedOptions {
  url: string;
  writerId: string;
  /** When given, requests go through it (and a held poll keeps the process alive, as any request on it does). */
  dispatcher?: Dispatcher;
  /** The long poll's hold, seconds (the plane caps it at 25). Default 25. */
  waitSeconds?: number;
  pageSize?: number;
  timeoutMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** The plane refused the key for a followed round (see FeedSpec.keyRefused). */
  keyRefused?: (message: string, apiKey: string | null) => void;
  /** Said once: the plane has no writer feed, the whole project's is followed instead. */
  fellBack?: (reason: string) => void;
}

/** What one round did. */
export interface ChangePull {
  /** Changes the plane sent. */
  received: number;
  /** The outcomes for runs this store holds. */
  updates: RunUpdate[];
  cursor: string | null;
}

/** Errors of a catch-up that a retry of the same round would not change: reported, and the cursor moves on. */
const FINAL = new Set<string>([ErrorCode.RUN_INCOMPLETE, ErrorCode.RESTORE_UNVERIFIED, ErrorCode.NOT_ON_PLANE]);

/** The writer feed's path for a page's query (the whole feed's `/v1/changes?…`). */
const WRITER_FEED = '/v1/writer-changes';

export class ChangeFeedConsumer {
  private readonly feed: FeedFollower<ExecutionChange, RunUpdate[]>;
  private unfollow: (() => void) | null = null;
  /** The plane answered the writer feed 404: the whole project's feed is asked from then on. */
  private wholeFeed = false;
  /** The store keeps decisions of runs it never touched (the whole decision feed): ask for the runs with one too (null: not read from the store's meta yet). */
  private decided: boolean | null = null;

  constructor(
    private readonly store: Checkpointer,
    private readonly apiKey: () => string,
    private readonly onUpdate: (u: RunUpdate) => void,
    private readonly o: ChangeFeedOptions,
  ) {
    const http = o.dispatcher ? new PlaneHttp(o.url, { dispatcher: o.dispatcher }) : null;
    // its own kept-alive connection, closed by stop(): never the process-wide agent's
    const agent = o.dispatcher
      ? null
      : new URL(o.url).protocol === 'https:'
        ? new HttpsAgent({ keepAlive: true, maxSockets: 1 })
        : new HttpAgent({ keepAlive: true, maxSockets: 1 });
    this.feed = new FeedFollower({
      name: 'change feed',
      path: '/v1/changes',
      page: ChangeFeed,
      store,
      cursorKey: async () => CHANGES_CURSOR_META,
      // a feed read: sent again on a kept-alive connection the plane had closed (http.ts sendAgainIfStale)
      get: async (path, timeoutMs, signal) => {
        const send = (p: string) =>
          http
            ? http.request('GET', p, { apiKey: this.apiKey(), timeoutMs, signal, sendAgainIfStale: true })
            : sendAgainIfStale(() => getUnref(o.url, p, this.apiKey(), timeoutMs, agent!, signal), signal);
        if (this.wholeFeed) return send(path);
        const asked = (decided: boolean) =>
          `${WRITER_FEED}${path.slice(path.indexOf('?'))}&writerId=${encodeURIComponent(o.writerId)}&decided=${decided}`;
        const decided = await this.askingDecided();
        let res = await send(asked(decided));
        // the store began to keep others' decisions while this page was held: a page without their runs' changes
        // would move the cursor past them, so the same page is asked again with them
        if (res.status === 200 && !decided && this.decided) res = await send(asked(true));
        if (res.status !== 404) return res;
        this.wholeFeed = true;
        o.fellBack?.(writerFeedMissing(res, WRITER_FEED, 'writer feed', 'change feed'));
        return send(path);
      },
      // the newest decision here before the GET: forgetting on this page never reaches a decision recorded after it was served
      mark: () => store.decisionSeq(),
      handle: (items, mark) => this.handle(items, mark ?? 0),
      backoff: { baseMs: o.backoffBaseMs ?? 500, capMs: o.backoffCapMs ?? 30_000 },
      waitSeconds: o.waitSeconds,
      pageSize: o.pageSize,
      timeoutMs: o.timeoutMs,
      // rounds never overlap, so a page is never handled twice at once
      serial: true,
      ref: false,
      keyRefused: o.keyRefused,
      apiKey: this.apiKey,
      close: async () => {
        await http?.close();
        agent?.destroy();
      },
    });
  }

  /**
   * From the next round on, the feed also carries runs with a decision at the
   * plane: the store now keeps decisions of runs it may never have touched
   * (the whole decision feed), and forgets each when its pause closes. Kept in
   * the store's meta (CHANGES_DECIDED_META): a store that ever followed the
   * whole decision feed asks so from its first round after a restart.
   */
  async askDecided(): Promise<void> {
    if (this.decided === true) return;
    this.decided = true;
    await this.store.setMeta(CHANGES_DECIDED_META, 'true');
  }

  private async askingDecided(): Promise<boolean> {
    if (this.decided === null) {
      const kept = (await this.store.getMeta(CHANGES_DECIDED_META)) === 'true';
      // askDecided() may have said so while the meta was read: that stands
      if (this.decided === null) this.decided = kept;
    }
    return this.decided;
  }

  /** True while the feed is followed (until stop()). */
  get following(): boolean {
    return this.feed.following;
  }

  /** The last round's error, null after a round that succeeded. */
  get lastError(): string | null {
    return this.feed.lastError;
  }

  /** One round: the changes after the saved cursor, holding up to `waitSeconds` (0: answer at once); handle them; save the cursor. */
  async pull(waitSeconds = 0, signal?: AbortSignal): Promise<ChangePull> {
    const r = await this.feed.pull(waitSeconds, signal);
    return { received: r.received, updates: r.result, cursor: r.cursor };
  }

  private async handle(items: ExecutionChange[], decisionsBefore: number): Promise<RunUpdate[]> {
    const updates: RunUpdate[] = [];
    for (const change of items) {
      const u = await this.consider(change, decisionsBefore);
      if (!u) continue;
      updates.push(u);
      this.onUpdate(u);
    }
    return updates;
  }

  /** What one change means for this store, done: null when it is not about a run this store holds, or is this writer's own. */
  private async consider(c: ExecutionChange, decisionsBefore: number): Promise<RunUpdate | null> {
    const mine = this.o.writerId;
    if (c.lastWriterId === mine && (c.claimedBy === null || c.claimedBy === mine)) return null;
    const local = await this.store.latest(c.executionId);
    if (!local) {
      // decisions the decision feed kept for this run (restore may bring it): only the one for a pause still open there stays
      await this.store.forgetUnheldDecisions(c.executionId, decidablePause(c), decisionsBefore);
      return null;
    }
    const base = {
      executionId: c.executionId,
      status: c.status,
      planeSeq: c.lastSeq,
      localSeq: local.seq,
      by: c.lastWriterId,
    };
    if (c.deleted) return { ...base, outcome: 'deleted_on_plane' };
    if (c.lastSeq !== null && c.lastSeq > local.seq && c.lastWriterId !== mine) {
      try {
        const r = await restoreFromPlane(this.store, c.executionId, {
          url: this.o.url,
          writerId: this.o.writerId,
          apiKey: this.apiKey(),
          dispatcher: this.o.dispatcher,
          timeoutMs: this.o.timeoutMs,
        });
        if (r.diverged.length) return { ...base, outcome: 'diverged', diverged: r.diverged };
        return { ...base, outcome: 'caught_up', inserted: r.inserted, stalePendingRemoved: r.stalePendingRemoved };
      } catch (e) {
        const code = (e as { code?: string }).code ?? '';
        if (!FINAL.has(code)) throw e;
        return { ...base, outcome: 'failed', code, message: (e as Error).message };
      }
    }
    if (c.lastSeq === local.seq && c.pauseState === 'claimed' && c.claimedBy && c.claimedBy !== mine) {
      const open = await this.store.getPendingInterrupt(c.executionId);
      if (open && (c.pauseCheckpointId === null || open.checkpointId === c.pauseCheckpointId)) {
        return { ...base, outcome: 'claimed_elsewhere', checkpointId: c.pauseCheckpointId, claimedBy: c.claimedBy };
      }
    }
    return null;
  }

  /** Follow the feed until stop(): rounds back to back, a backoff after a failed one. */
  follow(): void {
    if (!this.unfollow) this.unfollow = this.feed.follow();
  }

  /** Stop following, wait for the round in flight to end, close the connection. */
  stop(): Promise<void> {
    return this.feed.stop();
  }
}

/**
 * The pause of a run not held here that a decision kept for it may still
 * answer: its pause open on the plane, or claimed there but not yet moved past
 * (a claim only held may be released). None once the run was deleted, moved
 * on from that pause (claimed and applied: its claimer's rows arrived) or
 * ended: its decisions were applied or superseded elsewhere.
 */
function decidablePause(c: ExecutionChange): string | null {
  if (c.deleted || !c.pauseCheckpointId) return null;
  if (c.pauseState === 'open' || (c.pauseState === 'claimed' && c.status === 'paused')) return c.pauseCheckpointId;
  return null;
}

/** The consumer a replica makes from its options (the feed's backoff starts at 500 ms at least). */
export function changeFeedOf(
  store: Checkpointer,
  writerId: string,
  apiKey: () => string,
  onUpdate: (u: RunUpdate) => void,
  o: {
    url: string;
    dispatcher?: Dispatcher;
    changeWaitSeconds?: number;
    timeoutMs: number;
    backoffBaseMs: number;
    backoffCapMs?: number;
    keyRefused?: (message: string, apiKey: string | null) => void;
    fellBack?: (reason: string) => void;
  },
): ChangeFeedConsumer {
  return new ChangeFeedConsumer(store, apiKey, onUpdate, {
    url: o.url,
    writerId,
    dispatcher: o.dispatcher,
    waitSeconds: o.changeWaitSeconds,
    timeoutMs: o.timeoutMs,
    backoffBaseMs: Math.max(o.backoffBaseMs, 500),
    backoffCapMs: o.backoffCapMs,
    keyRefused: o.keyRefused,
    fellBack: o.fellBack,
  });
}

/**
 * A GET whose socket does not keep the process alive (the feed's held poll is
 * background work): undici's pool refs its connection while a request waits,
 * so the feed keeps node:http for it. A failure on a reused kept-alive socket
 * before any byte of the answer is StaleConnection, sent again by the caller
 * under the HTTP layer's one rule (http.ts sendAgainIfStale); its second send
 * has its own `timeoutMs`.
 */
function getUnref(
  base: string,
  path: string,
  apiKey: string,
  timeoutMs: number,
  agent: HttpAgent,
  signal?: AbortSignal,
): Promise<{ status: number; body: unknown }> {
  const u = new URL(base);
  const full = new URL(`${u.pathname.replace(/\/$/, '')}${path}`, u.origin);
  const request = full.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // what the socket had read when this request was put on it: more than 0 on a reused one
    let socket: Socket | null = null;
    let readBefore: number | undefined;
    const req = request(
      full,
      {
        method: 'GET',
        agent,
        headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' },
        signal,
        timeout: timeoutMs,
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            /* keep the text */
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('socket', (s) => {
      s.unref();
      socket = s;
      readBefore = s.bytesRead;
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from the plane within ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) => {
      const stale = closedBeforeAnswer({ code: e.code, readBefore, readAtEnd: socket?.bytesRead });
      reject(stale ? new StaleConnection(e) : e);
    });
    req.end();
  });
}
