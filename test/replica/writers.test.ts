/**
 * A writer's numbers on the plane: one source of truth. Rows stored are counted
 * once however often they are delivered, and a backlog of 0 never comes with
 * "oldest row waiting since …".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { uuidv7 } from '../../shared/ids.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-writers-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('w', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const writer = async (id: string) =>
  (
    (await call(`${plane.url}/v1/writers`, { key })).body.items as {
      writerId: string;
      rowsAcked: number;
      backlogRows: number | null;
      oldestPendingAt: string | null;
    }[]
  ).find((w) => w.writerId === id)!;

describe('after an offline double claim', () => {
  it('regression: the conflict was shown, but not that a card was charged twice: it names the side effects both writers recorded', async () => {
    let checkpointId = '';
    const a = await eventsOf(async (s) => {
      await s.put(step('dbl', 0));
      checkpointId = (await s.recordInterrupt(pause('dbl', 1), { reason: 'approve', context: null })).checkpoint.id;
    }, 'machine-a');
    expect(
      (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'machine-a', rows: a } })).body
        .rejected,
    ).toBe(0);
    // both machines, offline, claimed the pause and ran the tool, each with its own idempotency cache
    const claimed = (writerId: string) => ({
      kind: 'interrupt_claimed',
      id: uuidv7(),
      executionId: 'dbl',
      checkpointId,
      writerId,
      claimedAt: new Date().toISOString(),
    });
    const effects = async (writerId: string, chargeId: string) =>
      eventsOf(async (s) => {
        await s.putIdempotent('dbl', 'charge:42', { chargeId });
        await s.putIdempotent('dbl', 'email:receipt', { sent: true });
        await s.putIdempotent('dbl', `audit:${writerId}`, null);
      }, writerId);
    const first = await call(`${plane.url}/v1/ingest`, {
      key,
      json: {
        protocol: 1,
        writerId: 'machine-a',
        rows: [claimed('machine-a'), ...(await effects('machine-a', 'ch_A'))],
      },
    });
    expect(first.body.rejected).toBe(0);
    const second = await call(`${plane.url}/v1/ingest`, {
      key,
      json: {
        protocol: 1,
        writerId: 'machine-b',
        rows: [claimed('machine-b'), ...(await effects('machine-b', 'ch_B'))],
      },
    });
    // the other charge id is refused as a conflict; the same receipt e-mail result is accepted; both count
    expect(second.body.rejected).toBe(1);
    const conflicts = (await call(`${plane.url}/v1/conflicts`, { key })).body.items as {
      executionId: string;
      sideEffects: string[];
    }[];
    expect(conflicts.filter((c) => c.executionId === 'dbl')).toEqual([
      expect.objectContaining({
        winnerWriterId: 'machine-a',
        loserWriterId: 'machine-b',
        sideEffects: ['charge:42', 'email:receipt'],
      }),
    ]);
    expect((await call(`${plane.url}/v1/executions/dbl`, { key })).body.conflicts[0].sideEffects).toEqual([
      'charge:42',
      'email:receipt',
    ]);
    // the run list marks the run
    const listed = (await call(`${plane.url}/v1/executions`, { key })).body.items as {
      executionId: string;
      claimConflicts: number;
    }[];
    expect(listed.find((r) => r.executionId === 'dbl')?.claimConflicts).toBe(1);
    expect(listed.filter((r) => r.executionId !== 'dbl').every((r) => r.claimConflicts === 0)).toBe(true);
  });
});

describe('a writer on the plane', () => {
  it('regression: duplicate deliveries were counted as acked rows (1,540 for 800 distinct rows)', async () => {
    const rows = await eventsOf(async (s) => {
      for (let i = 0; i < 10; i++) await s.put(step('dup-run', i));
    }, 'dup-writer');
    for (let round = 0; round < 3; round++) {
      const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'dup-writer', rows } });
      expect(r.body).toMatchObject(round === 0 ? { accepted: 10, duplicate: 0 } : { accepted: 0, duplicate: 10 });
    }
    expect(await writer('dup-writer')).toMatchObject({ rowsAcked: 10 });
  });

  it('regression: "Backlog: 0 rows" beside "oldest row waiting since 51 s ago" after a drain', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('w.db'), writerId: 'drained-writer' });
    for (let i = 0; i < 30; i++) await store.put(step('drained-run', i));
    const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0 });
    try {
      const s = await replica.flush({ timeoutMs: 30_000 });
      expect(s.pendingRows).toBe(0);
      expect(await writer('drained-writer')).toMatchObject({ rowsAcked: 30, backlogRows: 0, oldestPendingAt: null });
      // a run's start and last write are its rows' times (the writer's clock), not when the plane received it
      const [first] = await store.list('drained-run', { limit: 1 });
      const [newest] = await store.list('drained-run', { order: 'desc', limit: 1 });
      const seen = (await call(`${plane.url}/v1/executions/drained-run`, { key })).body.execution;
      expect(seen).toMatchObject({ startedAt: first.createdAt, lastWriteAt: newest.createdAt });
      const listed = (await call(`${plane.url}/v1/executions`, { key })).body.items.find(
        (r: { executionId: string }) => r.executionId === 'drained-run',
      );
      expect(listed).toMatchObject({ startedAt: first.createdAt, lastWriteAt: newest.createdAt });
      // and a plane that is told a zero backlog with a time (an older client) does not store the time
      const more = await eventsOf(async (x) => {
        await x.put(step('other-run', 0));
      }, 'old-client');
      await call(`${plane.url}/v1/ingest`, {
        key,
        json: {
          protocol: 1,
          writerId: 'old-client',
          backlog: { rows: 0, bytes: 0, oldestPendingAt: new Date(Date.now() - 51_000).toISOString() },
          rows: more,
        },
      });
      expect(await writer('old-client')).toMatchObject({ backlogRows: 0, oldestPendingAt: null });
    } finally {
      await replica.stop();
      await store.close();
    }
  });
});
