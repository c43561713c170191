/** Waiting in tests for something another process, timer or connection does. */

/**
 * Poll `cond` every `everyMs` until it holds; fail naming `what` after `ms`
 * (a bound on a hang, not a timing: generous, so a busy machine meets it).
 */
export async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  ms = 60_000,
  everyMs = 10,
): Promise<void> {
  const t = Date.now();
  while (!(await cond())) {
    if (Date.now() - t > ms) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
