/**
 * The plane's long polls (GET /v1/decisions, GET /v1/changes): one wait/wake
 * mechanism for every feed ordered by a project's clock (clocks.ts).
 *
 * - A feed is a name, a page read after a cursor (the last seq seen), and a
 *   read of the project's newest seq.
 * - A write that commits feed entries wakes this process's polls of that
 *   project at once (`announce(db, feed, projectId)`).
 * - While any poll of a project waits in this process, one timer per
 *   (feed, project) reads the newest seq about every second and announces it;
 *   a poll re-reads its page only when that passes its cursor. So entries
 *   written by another plane process arrive too, and waiting polls cost one
 *   small query a second per project, not one per poll. Ref-counted: the last
 *   waiter to leave stops the timer.
 * - A feed may be woken its own way instead (`Feed.wakes`): a writer's feed
 *   is woken by the runs that changed (writer-wakes.ts), not by the project.
 * - A feed's seqs must commit in order (each feed draws them under a
 *   per-project lock held to commit), so a poll that has seen seq n never
 *   later finds a smaller seq committed behind it.
 */
import { EventEmitter } from 'node:events';
import { ErrorCode } from '../shared/errors.js';
import type { PlaneDb } from './db/open.js';
import { refusal } from './http/errors.js';

/** How often the database is rechecked while long polls of a project wait (entries of other plane processes). */
export const FEED_RECHECK_MS = 1000;

export interface FeedPage {
  items: unknown[];
  nextCursor: string;
  /** No items, but the page stopped at a bound before the feed's end (a writer's feed: writer-changes.ts): read on at once. */
  readOn?: boolean;
}

/** One feed: its name (the wake-up channel) and its reads. */
export interface Feed<P extends FeedPage> {
  name: string;
  /** The page after seq `after` (at most `limit` items); `nextCursor` is the last item's seq, or `after`. */
  page(db: PlaneDb, projectId: string, after: number, limit: number): Promise<P>;
  /** The project's newest seq in this feed, or null when it has none. */
  newest(db: PlaneDb, projectId: string): Promise<number | null>;
  /**
   * How a poll of this feed is woken, when not by every commit of the project's entries (the default: `announce`
   * and the shared recheck). Resolves once every entry committed after it resolves will wake `wake`; returns the
   * call that stops it. A poll reads its first page after this resolves, so it misses no entry in between.
   */
  wakes?(db: PlaneDb, projectId: string, wake: () => void): Promise<() => void>;
}

const signals = new WeakMap<object, EventEmitter>();

/** This process's wake-up of the long polls of one database. */
export function feedSignal(db: PlaneDb): EventEmitter {
  let s = signals.get(db);
  if (!s) {
    s = new EventEmitter();
    s.setMaxListeners(0);
    signals.set(db, s);
  }
  return s;
}

/** Wake this process's polls of one feed of a project (after the transaction that wrote its entries committed). */
export function announce(db: PlaneDb, feed: string, projectId: string): void {
  feedSignal(db).emit(feed, projectId);
}

interface Watch {
  waiters: number;
  timer: NodeJS.Timeout;
}
const watches = new WeakMap<object, Map<string, Watch>>();

/** The long polls in progress in this process, by database and feed name. */
const polling = new WeakMap<object, Map<string, number>>();

/** The polls of one feed waiting in this process, their listeners and the feed's recheck timers (for tests: all 0 when none waits). */
export function waitersOf(db: PlaneDb, feed: string): { polls: number; listeners: number; timers: number } {
  const s = feedSignal(db);
  const timers = [...(watches.get(db)?.keys() ?? [])].filter((k) => k.startsWith(`${feed}\u0000`)).length;
  return {
    polls: polling.get(db)?.get(feed) ?? 0,
    listeners: s.listenerCount(feed) + s.listenerCount(`${feed}:max`),
    timers,
  };
}

function countPoll(db: PlaneDb, feed: string, by: 1 | -1): void {
  const byFeed = polling.get(db) ?? new Map<string, number>();
  polling.set(db, byFeed);
  const n = (byFeed.get(feed) ?? 0) + by;
  if (n) byFeed.set(feed, n);
  else byFeed.delete(feed);
}

function watch(db: PlaneDb, feed: Feed<FeedPage>, projectId: string): () => void {
  const byKey = watches.get(db) ?? new Map<string, Watch>();
  watches.set(db, byKey);
  const key = `${feed.name}\u0000${projectId}`;
  let w = byKey.get(key);
  if (!w) {
    const created: Watch = { waiters: 0, timer: undefined as unknown as NodeJS.Timeout };
    const tick = async () => {
      try {
        const max = await feed.newest(db, projectId);
        if (max != null) feedSignal(db).emit(`${feed.name}:max`, projectId, max);
      } catch {
        // a database that does not answer: the polls answer empty at their deadline, or on a wake-up
      }
      if (byKey.get(key) === created) created.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
    };
    created.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
    byKey.set(key, created);
    w = created;
  }
  const mine = w;
  mine.waiters++;
  return () => {
    if (--mine.waiters > 0) return;
    clearTimeout(mine.timer);
    if (byKey.get(key) === mine) byKey.delete(key);
  };
}

/** One answer without holding: pages on from `after` while a page stopped at its bound with none of its entries (`readOn`). */
export async function pageOn<P extends FeedPage>(page: (after: number) => Promise<P>, after: number): Promise<P> {
  let p = await page(after);
  while (p.readOn) p = await page(Number(p.nextCursor));
  return p;
}

/**
 * The long poll: the page after `after` at once when it has entries, else
 * wait up to `waitMs` for one (this process's wake-up, or the shared recheck
 * seeing a newer seq), else an empty page with the same cursor. Stops waiting
 * when `signal` aborts (the client hung up, the plane closes).
 */
export async function waitForFeed<P extends FeedPage>(
  db: PlaneDb,
  feed: Feed<P>,
  projectId: string,
  after: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<P> {
  const deadline = performance.now() + waitMs;
  const bus = feedSignal(db);
  let wake: (() => void) | null = null;
  // a wake-up while the page is being read is not lost: the next wait is skipped
  let signalled = false;
  let cursor = after;
  const onSignal = (p: string) => {
    if (p !== projectId) return;
    signalled = true;
    wake?.();
  };
  const onMax = (p: string, max: number) => {
    if (p === projectId && max > cursor) onSignal(p);
  };
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  countPoll(db, feed.name, 1);
  let unwatch: () => void;
  if (feed.wakes) {
    try {
      unwatch = await feed.wakes(db, projectId, () => onSignal(projectId));
    } catch (e) {
      countPoll(db, feed.name, -1);
      signal?.removeEventListener('abort', onAbort);
      throw e;
    }
  } else {
    bus.on(feed.name, onSignal);
    bus.on(`${feed.name}:max`, onMax);
    const unwatchFeed = watch(db, feed, projectId);
    unwatch = () => {
      unwatchFeed();
      bus.off(feed.name, onSignal);
      bus.off(`${feed.name}:max`, onMax);
    };
  }
  try {
    for (;;) {
      signalled = false;
      const page = await feed.page(db, projectId, cursor, limit);
      cursor = Number(page.nextCursor);
      const left = deadline - performance.now();
      if (page.items.length || left <= 0 || signal?.aborted) return page;
      if (signalled || page.readOn) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, left);
        function done() {
          clearTimeout(t);
          wake = null;
          resolve();
        }
        wake = done;
      });
    }
  } finally {
    unwatch();
    countPoll(db, feed.name, -1);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A feed's `after` cursor (the last seq seen; none: from the start). Feed
 * seqs are safe integers: a larger number would be rounded, and the feed
 * would skip or repeat entries. BAD_CURSOR names `path`, the feed it belongs to.
 */
export function seqCursor(after: string | undefined, path: string): number {
  if (after === undefined || after === '') return 0;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(after))
    throw refusal(
      ErrorCode.BAD_CURSOR,
      `after: '${after.slice(0, 40)}' is not a cursor this plane issued (a nextCursor of GET ${path})`,
    );
  const n = Number(after);
  if (!Number.isSafeInteger(n))
    throw refusal(
      ErrorCode.BAD_CURSOR,
      `after: '${after}' is above the largest feed seq this plane can issue (${Number.MAX_SAFE_INTEGER})`,
    );
  return n;
}
