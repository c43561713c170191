/** Client → plane → another client, through the real drain and a real plane (PGlite) over HTTP. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectPlane, restoreFromPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-restore-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('restore', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

let n = 0;
const get = (path: string) => call(`${plane.url}${path}`, { key });

describe('restore from the plane', () => {
  let store: SqliteCheckpointer;
  let other: SqliteCheckpointer;
  let proxy: FaultProxy;
  let replica: Replica | null = null;
  beforeEach(async () => {
    n++;
    store = new SqliteCheckpointer({ path: tmp.file(`a${n}.db`), writerId: `laptop-a-${n}` });
    other = new SqliteCheckpointer({ path: tmp.file(`b${n}.db`), writerId: `laptop-b-${n}` });
    proxy = await new FaultProxy(plane.url).start();
  });
  afterEach(async () => {
    await replica?.stop();
    replica = null;
    await proxy.close();
    await store.close();
    await other.close();
  });
  const connect = () => (replica = connectPlane(store, { url: proxy.url, apiKey: key, pollMs: 0, debounceMs: 50, backoffBaseMs: 20, backoffCapMs: 200, timeoutMs: 5000 }));

  it('ingest order defect: a run deleted and started again under the same id while connected (one batch) is the new run on the plane, and restores elsewhere', async () => {
    const exec = `again-${n}`;
    const r = connect();
    for (let i = 0; i < 3; i++) await store.put(step(exec, i, { nodeOutput: 'old run' }));
    expect(await r.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    const before = proxy.seen.length;
    // inside the drain's debounce: the deletion and the new run's rows leave in one batch
    await store.deleteExecution(exec);
    await store.put(step(exec, 0, { nodeOutput: 'new run' }));
    await store.put(step(exec, 1, { nodeOutput: 'new run' }));
    await store.recordInterrupt(pause(exec, 1), { reason: 'approval', context: { run: 'new' } });
    expect(await r.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    const batches = proxy.seen.slice(before).filter((s) => s.path === '/v1/ingest');
    expect(batches.map((b) => b.rows)).toEqual([5]);

    const local = await store.list(exec);
    const onPlane = await get(`/v1/executions/${exec}/rows`);
    expect(onPlane.body.items.map((x: { id: string }) => x.id)).toEqual(local.map((x) => x.id));
    expect((await get(`/v1/executions/${exec}`)).body.execution).toMatchObject({ status: 'paused', rowCount: 3 });

    const restored = await restoreFromPlane(other, exec, { url: plane.url, apiKey: key });
    expect(restored).toMatchObject({ inserted: 3, diverged: [], pendingImported: true, totalRows: 3 });
    expect((await other.getPendingInterrupt(exec))?.context).toEqual({ run: 'new' });
    expect(await other.readState((await other.latest(exec))!)).toEqual(await store.readState((await store.latest(exec))!));
  });
});
