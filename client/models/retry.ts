/**
 * How the model adapters wait between attempts: full jitter on an exponential
 * ceiling (AWS's "full jitter"), never shorter than what the server asked for
 * (Retry-After), and cut short by the run's abort signal. Node's
 * timers/promises sleep removes its abort listener when it ends.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Backoff {
  /** first ceiling, ms (doubled per attempt) */
  baseMs: number;
  /** largest ceiling, ms */
  capMs: number;
}

/** Wait before retry number `attempt` (1 for the first retry). Rejects with the signal's reason on abort. */
export function backoff(attempt: number, b: Backoff, floorMs: number, signal?: AbortSignal): Promise<void> {
  const ms = Math.max(floorMs, Math.random() * Math.min(b.capMs, b.baseMs * 2 ** attempt));
  return sleep(ms, undefined, signal ? { signal } : undefined);
}
