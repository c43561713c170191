/**
 * How the client waits between attempts: the model adapters between calls to
 * a provider, the replica's drain between rounds that failed. One formula for
 * all of them, so the same failure is waited out the same way everywhere.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A full-jitter exponential backoff: each wait is random below a ceiling that starts at `baseMs` and doubles per retry up to `capMs`.
 *
 * @inline
 */
export interface Backoff {
  /** The first retry's ceiling, ms (doubled per retry). */
  baseMs: number;
  /** The largest ceiling, ms. */
  capMs: number;
}

/** Past this many doublings every sane cap is reached; keeps `2 ** n` finite. */
const MAX_DOUBLINGS = 30;

/**
 * The wait before retry number `attempt` (1 for the first retry), in ms:
 * uniform in `[0, min(capMs, baseMs · 2^(attempt−1))]` ("full jitter"), and
 * never shorter than `floorMs`, the wait the server asked for (Retry-After),
 * even past the cap: the server knows when it will answer.
 *
 * Why full jitter: many clients that failed together (a plane restart, a
 * provider's rate limit) would retry together on a fixed or lightly jittered
 * schedule, and fail together again; drawing the whole wait at random spreads
 * them over the window, which in AWS's comparison ("Exponential Backoff And
 * Jitter") finishes the same work with the fewest calls and little extra
 * time. graphile-worker retries the same way.
 */
/** The longest Retry-After honoured (one hour). */
const MAX_FLOOR_MS = 3_600_000;

export function backoffDelay(attempt: number, b: Backoff, floorMs = 0, random: () => number = Math.random): number {
  const doublings = Math.min(Math.max(0, Math.floor(attempt) - 1), MAX_DOUBLINGS);
  const ceiling = Math.min(b.capMs, b.baseMs * 2 ** doublings);
  // a server's Retry-After is honoured up to an hour: past 2^31-1 ms Node's setTimeout fires at once
  return Math.max(Math.min(floorMs, MAX_FLOOR_MS), random() * ceiling);
}

/**
 * Wait {@link backoffDelay} ms. An abort rejects at once with Node's
 * `AbortError` (the signal's reason as its `cause`); Node's sleep removes its
 * abort listener when it ends. `ref: false`: the wait does not keep the
 * process alive (background work such as a feed's retry).
 */
export function backoff(attempt: number, b: Backoff, floorMs: number, signal?: AbortSignal, ref = true): Promise<void> {
  return sleep(backoffDelay(attempt, b, floorMs), undefined, { ref, ...(signal ? { signal } : {}) });
}

/** A Retry-After header in ms (delay-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfter(h: string | string[] | undefined): number | null {
  const v = Array.isArray(h) ? h[0] : h;
  if (!v) return null;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
