/**
 * What every bench reports: a median with its spread (min–max) over
 * interleaved repetitions, ratios taken within a repetition, and the CPU a
 * timed section cost the bench process.
 */

export interface Summary {
  median: number;
  min: number;
  max: number;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export function summary(xs: number[]): Summary {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/**
 * Per-repetition ratios a[i] / b[i], summarised: each pair was measured
 * minutes apart at most, so a slow patch of a shared disk moves both sides of
 * a pair instead of one side of two medians. Null when either side is missing.
 */
export function ratios(a: number[] | undefined, b: number[] | undefined): Summary | null {
  if (!a?.length || !b || a.length !== b.length) return null;
  return summary(a.map((x, i) => x / b[i]));
}

/** "1234 [1100–1300]" (digits: decimals, suffix: "×", "%" scales by 100). */
export function fmt(s: Summary | null | undefined, digits = 0, suffix = ''): string {
  if (!s) return 'n/a';
  const k = suffix === '%' ? 100 : 1;
  const n = (x: number) => (x * k).toFixed(digits);
  return `${n(s.median)}${suffix} [${n(s.min)}–${n(s.max)}]`;
}

/** Wall seconds and CPU seconds (user + system, this process) of one timed section. */
export async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; secs: number; cpuSecs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { value, secs, cpuSecs: (c.user + c.system) / 1e6 };
}
