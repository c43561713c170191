/**
 * A writer's numbers on the plane: one source of truth. Rows stored are counted
 * once however often they are delivered, and a backlog of 0 never comes with
 * "oldest row waiting since …".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';
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

const writer = async (id: string) => ((await call(`${plane.url}/v1/writers`, { key })).body.items as { writerId: string; rowsAcked: number; backlogRows: number | null; oldestPendingAt: string | null }[]).find((w) => w.writerId === id)!;

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
      // and a plane that is told a zero backlog with a time (an older client) does not store the time
      const more = await eventsOf(async (x) => {
        await x.put(step('other-run', 0));
      }, 'old-client');
      await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'old-client', backlog: { rows: 0, bytes: 0, oldestPendingAt: new Date(Date.now() - 51_000).toISOString() }, rows: more } });
      expect(await writer('old-client')).toMatchObject({ backlogRows: 0, oldestPendingAt: null });
    } finally {
      await replica.stop();
      await store.close();
    }
  });
});
