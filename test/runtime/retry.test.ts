/**
 * One backoff for the whole client (the model adapters and the replica's
 * drain): full jitter under an exponential ceiling that starts at `baseMs` and
 * stops at `capMs`, never shorter than the server's Retry-After.
 */
import { describe, expect, it } from 'vitest';
import { backoff, backoffDelay, retryAfter } from '../../client/retry.js';

const b = { baseMs: 100, capMs: 1000 };
const max = () => 1 - Number.EPSILON;
const min = () => 0;

describe('backoffDelay', () => {
  it('draws the whole wait at random: from 0 up to a ceiling that starts at baseMs and doubles per retry', () => {
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, b, 0, min))).toEqual([0, 0, 0, 0]);
    expect([1, 2, 3, 4].map((n) => Math.round(backoffDelay(n, b, 0, max)))).toEqual([100, 200, 400, 800]);
    expect(backoffDelay(2, b, 0, () => 0.5)).toBe(100);
  });

  it('the ceiling stops at capMs, however many retries', () => {
    expect(Math.round(backoffDelay(5, b, 0, max))).toBe(1000);
    expect(Math.round(backoffDelay(1e6, b, 0, max))).toBe(1000);
    expect(Number.isFinite(backoffDelay(Number.MAX_SAFE_INTEGER, b, 0, max))).toBe(true);
  });

  it('is never shorter than the Retry-After floor, even past the cap (the server knows when it will answer)', () => {
    expect(backoffDelay(1, b, 250, min)).toBe(250);
    expect(backoffDelay(1, b, 50, max)).toBeCloseTo(100);
    expect(backoffDelay(9, b, 5000, max)).toBe(5000);
  });

  it('stays within its bounds under Math.random', () => {
    for (let n = 1; n <= 12; n++) {
      for (let i = 0; i < 200; i++) {
        const d = backoffDelay(n, b, 0);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(Math.min(1000, 100 * 2 ** (n - 1)));
      }
    }
  });

  it('a first retry (or a nonsense attempt number) waits at most baseMs', () => {
    expect(Math.round(backoffDelay(0, b, 0, max))).toBe(100);
    expect(Math.round(backoffDelay(-3, b, 0, max))).toBe(100);
  });
});

describe('backoff', () => {
  it("sleeps, and an abort cuts it short (Node's AbortError, the signal's reason as its cause)", async () => {
    await backoff(1, { baseMs: 1, capMs: 1 }, 0);
    const ac = new AbortController();
    const waiting = backoff(1, { baseMs: 10_000, capMs: 10_000 }, 10_000, ac.signal);
    let settled = false;
    waiting.catch(() => {}).finally(() => (settled = true));
    const reason = new Error('stop');
    ac.abort(reason);
    // "at once": settled before the event loop turns (a setImmediate), so before any timer could fire, the 10 s
    // sleep's included; an order of events, not a number of ms a loaded machine might exceed
    await new Promise((r) => setImmediate(r));
    expect(settled, 'the abort settled the sleep before the event loop turned').toBe(true);
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError', cause: reason });
  });
});

describe('retryAfter', () => {
  it('reads delay-seconds and HTTP dates, and null for anything else', () => {
    expect(retryAfter('2')).toBe(2000);
    expect(retryAfter(['0', '5'])).toBe(0);
    expect(retryAfter(undefined)).toBeNull();
    expect(retryAfter('soon')).toBeNull();
    const at = retryAfter(new Date(Date.now() + 60_000).toUTCString())!;
    expect(at).toBeGreaterThan(50_000);
    expect(at).toBeLessThanOrEqual(60_000);
    expect(retryAfter(new Date(Date.now() - 60_000).toUTCString())).toBe(0);
  });
});
