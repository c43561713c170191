/**
 * Counts read up to a cap, as the inspectors show them ("1,000+ runs",
 * "99+" approvals): a reader stops counting past the cap, so a count says
 * whether there were more.
 */

/**
 * A count read up to a cap: `n`; with `more`, more than `n` (the reader stopped at the cap); with `atMost`, at most
 * `n` (the reader counts some it may leave off the pages).
 */
export interface Counted {
  n: number;
  more: boolean;
  atMost?: boolean;
}

/** How many runs a run list counts at most ("more than 1,000 runs" past it). */
export const RUN_COUNT_CAP = 1000;

/** `total` (read up to `cap` + 1, or whole) as a count capped at `cap`. */
export const capped = (total: number, cap: number): Counted => ({ n: Math.min(total, cap), more: total > cap });
