/**
 * Page cursors of the plane's listings: opaque to a client (base64url JSON),
 * checked on the way back in, and a cursor this plane did not issue is 400
 * BAD_CURSOR.
 */
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { ExecutionId } from '../../shared/rows.js';
import { HttpError } from '../http/errors.js';

export const encodeCursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
export function decodeCursor<T>(c: string | undefined, check: (v: unknown) => v is T): T | undefined {
  if (!c) return undefined;
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (check(v)) return v;
  } catch {
    /* fall through */
  }
  throw new CursorError();
}
/** A page cursor this plane did not issue: 400 BAD_CURSOR (a request's query names it). */
export class CursorError extends HttpError {
  constructor(message = 'cursor is not one this plane issued') {
    super(400, ErrorCode.BAD_CURSOR, message);
  }
}

// A cursor's values go into queries as they are, so each check admits only what the compared column can hold
// (a value it cannot is a database error, a 500): a cursor that passes is one this plane could have issued.

/** A seq: a row's (int4, 0..LIMITS.maxSeq). */
export const isSeqCursor = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) <= LIMITS.maxSeq;
/** A key drawn from a project's clock (plane/clocks.ts), as the plane reads it (a JS number): a non-negative safe integer. */
export const isIdCursor = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
/**
 * A time as the plane writes it: `toISOString()` of its own clock, so canonical
 * (the parse gives back the same string) with a four-digit year of 0001–9999,
 * what Postgres reads (`Date.parse` also takes '1', '+275760-…' and year 0000).
 */
const isPlaneTime = (v: unknown): v is string =>
  typeof v === 'string' && /^(?!0000)\d{4}-/.test(v) && !Number.isNaN(Date.parse(v)) && new Date(v).toISOString() === v;
/** A run list cursor: the last run's (updatedAt, executionId). */
export const isExecCursor = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && isPlaneTime(v[0]) && ExecutionId.safeParse(v[1]).success;
