/**
 * The quarantine (GET /v1/quarantine) and the approvals inbox (GET /v1/pauses)
 * page by keys drawn in commit order per project: a reader following the
 * cursor never misses an entry that committed after it paged past the entry's
 * place. On Postgres a batch held before its commit (a row lock on its
 * writer's row, what any slow commit does) while two later batches commit
 * through another plane process is still seen by the reader that paged past
 * those two. On
 * PGlite (one transaction at a time) one batch lists in its own order.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('listing order on postgres');

/** A run paused (its step, then its pause) and a checkpoint the plane refuses, as one writer's batch. */
async function pausedAndRefused(executionId: string, bad: string, writerId: string) {
  const rows = await eventsOf(async (s) => {
    await s.put(step(executionId, 0));
    await s.recordInterrupt(pause(executionId, 1) as never, { reason: 'approve', context: { executionId } } as never);
  }, writerId);
  return [...rows, { kind: 'checkpoint', id: bad }];
}

const LISTINGS = {
  quarantine: { path: '/v1/quarantine', name: (i: { rowId: string }) => i.rowId },
  pauses: { path: '/v1/pauses', name: (i: { executionId: string }) => i.executionId },
} as const;
type Listing = keyof typeof LISTINGS;

/** A reader walking a listing one entry a page, by its cursor. */
function walker(plane: TestPlane, key: string, listing: Listing) {
  const { path, name } = LISTINGS[listing];
  let cursor: string | null = null;
  const seen: string[] = [];
  return {
    seen,
    /** Read the next page; the new cursor (null: the walk reached the end). */
    async next(): Promise<string | null> {
      const r = await call(`${plane.url}${path}?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        key,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      seen.push(...r.body.items.map(name));
      if (r.body.nextCursor) cursor = r.body.nextCursor;
      return r.body.nextCursor;
    },
  };
}

async function whole(plane: TestPlane, key: string, listing: Listing): Promise<string[]> {
  const r = await call(`${plane.url}${LISTINGS[listing].path}?limit=100`, { key });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.items.map(LISTINGS[listing].name);
}

describe('one batch lists in its own order (PGlite)', () => {
  let plane: TestPlane;
  beforeAll(async () => {
    plane = await startTestPlane('pglite');
  });
  afterAll(async () => plane?.close());

  it("a batch's refused rows and pauses list in the batch's order, after an earlier batch's, one page or many", async () => {
    const key = await plane.key('p', ['ingest', 'read']);
    const ingest = async (writerId: string, rows: unknown[]) => {
      const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId, rows } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    };
    await ingest('w1', await pausedAndRefused('r0', 'bad-0', 'w1'));
    const batch = [
      ...(await pausedAndRefused('r1', 'bad-1', 'w2')),
      ...(await pausedAndRefused('r2', 'bad-2', 'w2')),
      ...(await pausedAndRefused('r3', 'bad-3', 'w2')),
    ];
    await ingest('w2', batch);
    for (const [listing, want] of [
      ['quarantine', ['bad-0', 'bad-1', 'bad-2', 'bad-3']],
      ['pauses', ['r0', 'r1', 'r2', 'r3']],
    ] as const) {
      expect(await whole(plane, key, listing), listing).toEqual(want);
      const w = walker(plane, key, listing);
      while ((await w.next()) !== null);
      expect(w.seen, listing).toEqual(want);
    }
  });
});

describe.skipIf(!pg)('listings on postgres: batches committing out of order', () => {
  let tdb: TestDatabase;
  let plane: TestPlane;
  /**
   * A second plane process on the database. Through the first the later batches start transactions of their own (the
   * project has fewer than INGEST_IN_FLIGHT under way); through this one they reach the database whatever that
   * number is.
   */
  let other: TestPlane;
  let sql: postgres.Sql;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_listing_order');
    plane = await startTestPlane({ url: tdb.url });
    other = await startTestPlane({ url: tdb.url });
    sql = postgres(tdb.url, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end({ timeout: 2 });
    await plane?.close();
    await other?.close();
    await tdb?.drop();
  });

  it.each(['this', 'another'] as const)(
    'a batch held before its commit while two later batches commit is still seen by a reader that paged past them: its refused row and its pause; the later batches through %s plane process',
    async (via) => {
      const key = await plane.key(`p-${via}`, ['ingest', 'read']);
      const ingest = (writerId: string, rows: unknown[], through = plane) =>
        call(`${through.url}/v1/ingest`, { key, json: { protocol: 1, writerId, rows } });
      expect((await ingest('wA', await pausedAndRefused('r0', 'bad-0', 'wA'))).status).toBe(200);
      expect((await ingest('w1', await pausedAndRefused('r1', 'bad-1', 'w1'))).status).toBe(200);
      const readers = { quarantine: walker(plane, key, 'quarantine'), pauses: walker(plane, key, 'pauses') };
      for (const r of Object.values(readers)) expect(await r.next()).not.toBeNull();

      // the barrier: wA's writers row, locked here; wA's next batch draws its keys, then waits on it until COMMIT below
      const blocker = await sql.reserve();
      let held = true;
      try {
        await blocker`BEGIN`;
        const [{ pid }] = await blocker`SELECT pg_backend_pid() AS pid`;
        await blocker`SELECT 1 FROM writers WHERE writer_id = 'wA' FOR UPDATE`;
        const slow = ingest('wA', await pausedAndRefused('rA', 'bad-A', 'wA'));
        await until('the held batch waits on the barrier', async () => {
          const [w] =
            await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND ${pid}::int = ANY(pg_blocking_pids(pid))`;
          return w.n > 0;
        });
        expect(
          (await ingest('wB', await pausedAndRefused('rB', 'bad-B', 'wB'), via === 'this' ? plane : other)).status,
        ).toBe(200);
        expect(
          (await ingest('wC', await pausedAndRefused('rC', 'bad-C', 'wC'), via === 'this' ? plane : other)).status,
        ).toBe(200);
        // each reader pages past wB's entry (and past where wA's keys would be, were they drawn before their commit)
        for (const r of Object.values(readers)) {
          expect(await r.next()).not.toBeNull();
          expect(await r.next()).not.toBeNull();
        }
        expect(readers.quarantine.seen).toEqual(['bad-0', 'bad-1', 'bad-B']);
        expect(readers.pauses.seen).toEqual(['r0', 'r1', 'rB']);
        await blocker`COMMIT`;
        held = false;
        expect((await slow).status).toBe(200);
      } finally {
        if (held) await blocker`ROLLBACK`.catch(() => {});
        blocker.release();
      }
      for (const r of Object.values(readers)) while ((await r.next()) !== null);
      // every entry once, wA's held batch included; the reader's walk is the listing read whole
      expect
        .soft(readers.quarantine.seen.toSorted(), 'the quarantine, paged')
        .toEqual(['bad-0', 'bad-1', 'bad-A', 'bad-B', 'bad-C']);
      expect.soft(readers.pauses.seen.toSorted(), 'the inbox, paged').toEqual(['r0', 'r1', 'rA', 'rB', 'rC']);
      expect
        .soft(readers.quarantine.seen, 'the quarantine, paged and whole')
        .toEqual(await whole(plane, key, 'quarantine'));
      expect.soft(readers.pauses.seen, 'the inbox, paged and whole').toEqual(await whole(plane, key, 'pauses'));
    },
    60_000,
  );
});
