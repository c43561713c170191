/**
 * A write whose answer was lost. When the connection drops while a
 * transaction commits (or while an autocommitted statement runs), the
 * client cannot tell from the error whether the commit landed: the server
 * may have committed and died before answering. Every write of the store is
 * identifiable (a pre-minted row id, a lease holder, a decision id), so the
 * write's own `landed` looks for what it would have stored and decides.
 */
import { connectionFailed } from '../../support/db-errors.js';

/**
 * Run `fn` once. When it fails because the connection was lost, `landed`
 * decides whether its commit happened after all: its answer (the result the
 * lost attempt committed) is returned; null, or a `landed` that fails too
 * (the database still out of reach), rethrows the original error. Any other
 * error, or a lost connection without `landed`, is rethrown as it is.
 */
export async function commitOnce<T>(fn: () => Promise<T>, landed?: () => Promise<T | null>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!landed || !connectionFailed(e)) throw e;
    const r = await landed().catch(() => null);
    if (r) return r;
    throw e;
  }
}
