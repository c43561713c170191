import { retryLater } from '../../shared/db-errors.js';

/**
 * Which database failures mean "try again later" (503) rather than a bug (500):
 * every failure of the shared table (`shared/db-errors.ts`), found anywhere on
 * the error's cause chain. A database that is gone or refuses us is an
 * operator problem, answered as "retry later", never a 500.
 */
export function isUnavailable(e: unknown): boolean {
  return retryLater(e);
}
