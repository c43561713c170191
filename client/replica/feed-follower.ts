/**
 * One follower for the plane's long-poll feeds (GET /v1/changes,
 * GET /v1/decisions): the change feed and the decision feed are thin users
 * of it, each bringing its cursor key, its request and its item handler.
 *
 * A round: read the cursor from the store's meta, ask for the page after it
 * (holding up to `wait` seconds), check the envelope, hand the items to the
 * feed's handler in order, then save the page's `nextCursor`. A crash between
 * handling and saving re-reads the page: handlers are idempotent.
 *
 * Following (reference counted: `follow()` returns the function that ends
 * one follower): rounds run back to back while anyone follows; a failed round
 * waits the shared full-jitter backoff (client/retry.ts) before the next; the
 * last follower leaving, or stop(), aborts the round or the wait in flight.
 */
import type { z } from 'zod';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Checkpointer } from '../checkpointer.js';
import { backoff, type Backoff } from '../retry.js';

/** One answer of the plane to a feed request. */
export interface FeedResponse {
  status: number;
  body: unknown;
}

/** What a feed brings to the follower. */
export interface FeedSpec<T, R> {
  /** What the feed is called in its errors ('change feed'). */
  name: string;
  /** The feed's path ('/v1/changes'). */
  path: string;
  /** The page's shape; its items reach `handle` as parsed. */
  page: z.ZodType<{ items: T[]; nextCursor: string }>;
  store: Checkpointer;
  /** The store meta key the cursor is kept under. */
  cursorKey: (signal?: AbortSignal) => Promise<string>;
  /** One GET of the feed (`path` with its query). */
  get: (path: string, timeoutMs: number, signal?: AbortSignal) => Promise<FeedResponse>;
  /**
   * Read from the store before the GET, handed to `handle` with the page (the
   * change feed's newest decision seq: a page served before a write here must
   * not undo that write).
   */
  mark?: () => Promise<number>;
  /** Handles one page's items, in order, before the cursor moves past them; its result is the round's. `mark`: what `mark()` read before the GET. */
  handle: (items: T[], mark: number | null) => Promise<R>;
  backoff: Backoff;
  /** The long poll's hold while followed, seconds. Default 25. */
  waitSeconds?: number;
  pageSize?: number;
  /** A request's timeout beyond its hold, ms. Default 30 s. */
  timeoutMs?: number;
  /** Rounds never overlap: a pull() waits for the round in flight (a followed one included). Default false. */
  serial?: boolean;
  /** Whether a backoff keeps the process alive. Default true. */
  ref?: boolean;
  /** Closes the feed's connections (stop()). */
  close?: () => Promise<void> | void;
  /** A followed round the plane refused the key for (401: unknown or revoked): said at once, as the drain says it (the rounds go on backing off; a replaced key is used by the next). */
  keyRefused?: (message: string, apiKey: string | null) => void;
  /** The key the next round asks with (kept in memory only): a refusal is said with the key it was for, so a round sent before the key was replaced does not fail the new one. */
  apiKey?: () => string;
}

/** What one round did. */
export interface FeedRound<R> {
  /** Items the plane sent. */
  received: number;
  cursorKey: string;
  cursor: string;
  result: R;
}

export class FeedFollower<T, R> {
  private followers = 0;
  private loop: Promise<void> | null = null;
  private abort: AbortController | null = null;
  private stopped = false;
  private failures = 0;
  private busy: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | null = null;
  /** The last followed round's error, null after one that succeeded. */
  lastError: string | null = null;

  constructor(private readonly spec: FeedSpec<T, R>) {}

  /** True while someone follows and stop() was not called. */
  get following(): boolean {
    return this.followers > 0 && !this.stopped;
  }

  /** One round: the page after the saved cursor, holding up to `waitSeconds` (0: answer at once); handled; the cursor saved. */
  pull(waitSeconds = 0, signal?: AbortSignal): Promise<FeedRound<R>> {
    if (!this.spec.serial) return this.round(waitSeconds, signal);
    const run = this.busy.then(() => this.round(waitSeconds, signal));
    this.busy = run.catch(() => {});
    return run;
  }

  private async round(waitSeconds: number, signal?: AbortSignal): Promise<FeedRound<R>> {
    const s = this.spec;
    const cursorKey = await s.cursorKey(signal);
    const after = await s.store.getMeta(cursorKey);
    const q = new URLSearchParams({
      wait: String(waitSeconds),
      limit: String(s.pageSize ?? 100),
      ...(after ? { after } : {}),
    });
    const mark = s.mark ? await s.mark() : null;
    const res = await s.get(`${s.path}?${q}`, waitSeconds * 1000 + (s.timeoutMs ?? 30_000), signal);
    if (res.status !== 200) {
      const err = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
      throw new WaymarkError(
        ErrorCode.PLANE_ERROR,
        `the plane refused the ${s.name}: ${res.status} ${err?.code ?? ''} ${err?.message ?? ''}`.trim(),
        {
          details: { status: res.status, planeCode: err?.code ?? null },
        },
      );
    }
    const page = s.page.safeParse(res.body);
    if (!page.success)
      throw new WaymarkError(
        ErrorCode.PLANE_ERROR,
        `the plane sent a malformed ${s.name} page: ${zodIssues(page.error)}`,
      );
    const result = await s.handle(page.data.items, mark);
    if (page.data.nextCursor !== after) await s.store.setMeta(cursorKey, page.data.nextCursor);
    return { received: page.data.items.length, cursorKey, cursor: page.data.nextCursor, result };
  }

  /** Follow until the returned function is called (and every other follower left, or stop()). */
  follow(): () => void {
    if (this.stopped) return () => {};
    this.followers++;
    if (!this.loop) this.loop = this.run();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--this.followers === 0) this.abort?.abort();
    };
  }

  private async run(): Promise<void> {
    while (this.following) {
      this.abort = new AbortController();
      const { signal } = this.abort;
      const key = this.spec.apiKey?.() ?? null;
      try {
        await this.pull(this.spec.waitSeconds ?? 25, signal);
        this.failures = 0;
        this.lastError = null;
      } catch (e) {
        if (!this.following) break;
        // aborted by the last follower leaving (and one coming back since): not a failure of the feed
        if (signal.aborted) continue;
        this.failures++;
        this.lastError = (e as Error).message;
        const status = (e as { details?: { status?: unknown } }).details?.status;
        // 401 only: a key without a feed's scope (403: an ingest-only key and the change feed) may still drain
        if (status === 401) this.spec.keyRefused?.(this.lastError, key);
        // an abort ends the wait early (the loop condition then decides)
        await backoff(this.failures, this.spec.backoff, 0, signal, this.spec.ref ?? true).catch(() => {});
      }
    }
    this.loop = null;
    // a follower that came back while the last round ended starts a new loop
    if (this.following) this.loop = this.run();
  }

  /** Stop following, wait for the rounds in flight to end, close the connections. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.end();
    return this.stopping;
  }

  private async end(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.loop?.catch(() => {});
    await this.busy;
    await this.spec.close?.();
  }
}

/**
 * What a writer's feed says once when the plane answered its path 404 (an older plane, or a proxy that does not
 * pass the path): the whole project's feed (`whole`) is followed instead.
 */
export function writerFeedMissing(res: FeedResponse, path: string, what: string, whole: string): string {
  const code = (res.body as { error?: { code?: string } } | null)?.error?.code;
  return `this plane has no ${what} (GET ${path} answered 404${code ? ` ${code}` : ''}: a plane older than it, or a proxy that does not pass that path); following the whole project's ${whole} instead, which serves every run's entries to every writer (said once)`;
}

/** A zod error's issues, each with its path. */
export function zodIssues(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}
