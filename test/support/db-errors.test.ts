/**
 * One table decides which database failures are worth another attempt, for the
 * client's Postgres store and the plane alike, wherever on the cause chain the
 * deciding code sits: postgres.js errors, node-postgres (pg) errors, Node errno
 * errors, drizzle's and waymark's wrappers, Node's AggregateError of a connect.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import {
  codesOf,
  connectionFailed,
  connectionLost,
  databaseRefused,
  databaseUnavailable,
  DB_FAILURES,
  dbFailureOf,
  retryLater,
  SQLSTATE,
  transactionConflict,
} from '../../support/db-errors.js';
import { WaymarkError } from '../../shared/errors.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

/** The shape postgres.js gives a server error (PostgresError). */
const pgjs = (code: string) =>
  Object.assign(new Error('server said no'), { name: 'PostgresError', code, severity: 'FATAL', routine: 'x' });
/** The shape node-postgres gives a server error (DatabaseError). */
const nodePg = (code: string) =>
  Object.assign(new Error('server said no'), { name: 'error', code, severity: 'ERROR', length: 100 });
/** A Node socket error. */
const errno = (code: string, n: number) =>
  Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: n, syscall: 'connect' });
/** drizzle's wrapper: no code of its own, the driver's error as its cause. */
const drizzle = (cause: unknown) =>
  Object.assign(new Error('Failed query: select 1'), { name: 'DrizzleQueryError', cause });

describe('the code table', () => {
  it('names what each code means', () => {
    expect(DB_FAILURES['40001']).toBe('conflict');
    expect(DB_FAILURES['40P01']).toBe('conflict');
    expect(DB_FAILURES['57P01']).toBe('connection_lost');
    expect(DB_FAILURES['53300']).toBe('unavailable');
    expect(DB_FAILURES['08001']).toBe('unavailable');
    expect(DB_FAILURES['3D000']).toBe('refused');
    expect(DB_FAILURES.ECONNRESET).toBe('connection_lost');
    expect(DB_FAILURES.ECONNREFUSED).toBe('unavailable');
    expect(DB_FAILURES.ETIMEDOUT).toBe('unavailable');
    expect(SQLSTATE).toEqual({
      uniqueViolation: '23505',
      serializationFailure: '40001',
      deadlockDetected: '40P01',
      invalidTextRepresentation: '22P02',
    });
  });

  it('postgres.js and node-postgres server errors classify alike', () => {
    for (const make of [pgjs, nodePg]) {
      expect(connectionLost(make('57P01'))).toBe(true);
      expect(connectionLost(make('08006'))).toBe(true);
      expect(databaseUnavailable(make('53300'))).toBe(true);
      expect(databaseUnavailable(make('57P03'))).toBe(true);
      expect(databaseRefused(make('28P01'))).toBe(true);
      expect(transactionConflict(make('40001'))).toBe(true);
      // a constraint or a syntax error is the request's fault: never retried, never "retry later"
      expect(dbFailureOf(make('23505'))).toBeNull();
      expect(dbFailureOf(make('42601'))).toBeNull();
      expect(retryLater(make('23505'))).toBe(false);
    }
  });

  it('errno codes of the socket and postgres.js codes of its connection', () => {
    expect(connectionLost(errno('ECONNRESET', -104))).toBe(true);
    expect(connectionLost(errno('EPIPE', -32))).toBe(true);
    expect(databaseUnavailable(errno('ECONNREFUSED', -111))).toBe(true);
    expect(databaseUnavailable(errno('ETIMEDOUT', -110))).toBe(true);
    expect(connectionLost(Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' }))).toBe(
      true,
    );
    expect(databaseUnavailable(Object.assign(new Error('connect timeout'), { code: 'CONNECT_TIMEOUT' }))).toBe(true);
    // a file-system errno is no database failure
    expect(dbFailureOf(errno('ENOENT', -2))).toBeNull();
  });

  it('a code that is an inherited property name is not in the table', () => {
    expect(dbFailureOf({ code: 'constructor' })).toBeNull();
    expect(dbFailureOf({ code: 'toString' })).toBeNull();
  });
});

describe('the cause walker', () => {
  it('finds the deciding code below wrappers (drizzle, a waymark error), outermost first', () => {
    const e = drizzle(new WaymarkError('STORE_FAILED', 'the store failed', { cause: pgjs('57P01') }));
    expect(codesOf(e)).toEqual(['STORE_FAILED', '57P01']);
    expect(connectionLost(e)).toBe(true);
    expect(retryLater(e)).toBe(true);
  });

  it("walks an AggregateError's errors (Node's connect tries every address)", () => {
    const agg = Object.assign(new AggregateError([errno('ECONNREFUSED', -111), errno('ECONNREFUSED', -111)], ''), {});
    expect(codesOf(agg)).toEqual(['ECONNREFUSED', 'ECONNREFUSED']);
    expect(databaseUnavailable(drizzle(agg))).toBe(true);
  });

  it('stops at five levels and walks a cycle once', () => {
    let deep: unknown = pgjs('57P01');
    for (let i = 0; i < 5; i++) deep = drizzle(deep);
    expect(codesOf(deep)).toEqual([]);
    expect(retryLater(deep)).toBe(false);
    const a: { code: string; cause?: unknown } = { code: 'A' };
    const b = { code: 'B', cause: a };
    a.cause = b;
    expect(codesOf(a)).toEqual(['A', 'B']);
  });

  it('takes the first code the table knows, so an outer meaning wins', () => {
    expect(dbFailureOf({ code: 'X', cause: { code: '40001', cause: { code: '57P01' } } })).toBe('conflict');
    expect(dbFailureOf('ECONNRESET')).toBeNull();
    expect(dbFailureOf(null)).toBeNull();
    expect(dbFailureOf(undefined)).toBeNull();
  });
});

describe('the client and the plane agree', () => {
  it('every failure the client store retries, the plane answers as retry later', () => {
    for (const code of Object.keys(DB_FAILURES)) {
      const e = drizzle(pgjs(code));
      if (connectionFailed(e)) expect(retryLater(e)).toBe(true);
    }
  });

  it('the client store retries a lost or unavailable connection, not a conflict or a refusal', () => {
    const retried = Object.keys(DB_FAILURES).filter((code) => connectionFailed(pgjs(code)));
    // the four the issue found missing on the client side are among them
    expect(retried).toEqual(
      expect.arrayContaining(['53300', '08001', 'ECONNREFUSED', 'ETIMEDOUT', '57P01', 'ECONNRESET']),
    );
    expect(retried).not.toContain('40001');
    expect(retried).not.toContain('3D000');
  });

  it('the plane answers retry later for every entry of the table (what it did before)', () => {
    for (const code of Object.keys(DB_FAILURES)) expect(retryLater(errno(code, 0))).toBe(true);
  });
});

const ready = await pgReady('db-errors: real postgres.js errors');

describe.skipIf(!ready)('errors of a real server and a real driver', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_db_errors');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a terminated backend is a lost connection', async () => {
    const victim = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    const admin = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      const [{ pid }] = await victim<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      const sleeping = victim`SELECT pg_sleep(10)`.then(
        () => null,
        (e: unknown) => e,
      );
      // terminated while the sleep runs (seen in pg_stat_activity, not assumed after a pause a loaded machine may outlast)
      const deadline = Date.now() + 30_000;
      while (
        !(
          await admin`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid} AND state = 'active' AND query LIKE '%pg_sleep%'`
        ).length
      ) {
        if (Date.now() > deadline) throw new Error('the sleep never ran');
        await new Promise((r) => setTimeout(r, 10));
      }
      await admin`SELECT pg_terminate_backend(${pid})`;
      const e = await sleeping;
      expect(connectionLost(e)).toBe(true);
      expect(connectionFailed(e)).toBe(true);
    } finally {
      await victim.end({ timeout: 1 });
      await admin.end({ timeout: 1 });
    }
  });

  it('nothing listening is an unavailable database', async () => {
    const nobody = postgres('postgres://postgres@127.0.0.1:9/none', {
      max: 1,
      connect_timeout: 2,
      onnotice: () => {},
      fetch_types: false,
    });
    try {
      const e = await nobody`SELECT 1`.then(
        () => null,
        (err: unknown) => err,
      );
      expect(databaseUnavailable(e)).toBe(true);
    } finally {
      await nobody.end({ timeout: 1 });
    }
  });

  it('a database that does not exist is refused, and the plane says retry later', async () => {
    const url = new URL(db.url);
    url.pathname = '/waymark_no_such_database';
    const missing = postgres(url.toString(), { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      const e = await missing`SELECT 1`.then(
        () => null,
        (err: unknown) => err,
      );
      expect(databaseRefused(e)).toBe(true);
      expect(connectionFailed(e)).toBe(false);
      expect(retryLater(e)).toBe(true);
    } finally {
      await missing.end({ timeout: 1 });
    }
  });
});
