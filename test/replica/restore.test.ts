/** Client → plane → another client, through the real drain and a real plane (PGlite) over HTTP. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { main } from '../../client/cli/main.js';
import { connectPlane, restoreFromPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, releaseHold, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
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
  const connect = () =>
    (replica = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 50,
      backoffBaseMs: 20,
      backoffCapMs: 200,
      timeoutMs: 5000,
    }));

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
    expect(restored).toMatchObject({ inserted: 3, diverged: [], withheld: 0, pendingImported: true, totalRows: 3 });
    expect((await other.getPendingInterrupt(exec))?.context).toEqual({ run: 'new' });
    expect(await other.readState((await other.latest(exec))!)).toEqual(
      await store.readState((await store.latest(exec))!),
    );
  });

  // growing messages: each row is a snapshot delta on the row before it
  const grown = (id: string, i: number) =>
    step(id, i, { state: { messages: Array.from({ length: i + 1 }, (_, k) => ({ role: 'user', content: `m${k}` })) } });
  const errorOf = async (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
    );

  it('restore pages defect: the source moves on between pages; the restore is the snapshot the first page fixed (no pause row without its pending row)', async () => {
    const exec = `moving-${n}`;
    const r = connect();
    for (let i = 0; i < 6; i++) await store.put(grown(exec, i));
    await r.flush({ timeoutMs: 20_000 });
    let pages = 0;
    const restored = await restoreFromPlane(other, exec, {
      url: plane.url,
      apiKey: key,
      pageSize: 2,
      onProgress: async () => {
        if (++pages !== 1) return;
        // between page 1 and page 2 the source goes on to a pause, and the plane has it all
        await store.put(grown(exec, 6));
        await store.put(grown(exec, 7));
        await store.recordInterrupt(pause(exec, 8), { reason: 'approval', context: { at: 8 } });
        expect(await r.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0 });
        expect((await get(`/v1/executions/${exec}`)).body.execution).toMatchObject({ status: 'paused', lastSeq: 8 });
      },
    });
    expect(pages).toBe(3);
    expect(restored).toMatchObject({ inserted: 6, diverged: [], withheld: 0, pendingImported: false, totalRows: 6 });
    expect((await other.list(exec)).map((x) => x.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await other.getPendingInterrupt(exec)).toBeNull();
    expect(await other.readState((await other.latest(exec))!)).toEqual(
      await store.readState((await store.list(exec))[5]),
    );
    // a catch-up restore brings the rest, the pause with its row
    const again = await restoreFromPlane(other, exec, { url: plane.url, apiKey: key, pageSize: 2 });
    expect(again).toMatchObject({ inserted: 3, skipped: 6, pendingImported: true, totalRows: 9 });
    expect((await other.getPendingInterrupt(exec))?.checkpointId).toBe((await other.latest(exec))!.id);
  });

  it("broken chain defect: a branch that meets another's rows is refused from there on; the plane's copy stays the other branch, whole and restorable; the writing machine is told", async () => {
    const exec = `holed-${n}`;
    // another writer's rows already hold seqs 0-2 on the plane (an offline double resume), so ours are refused there
    const theirs = await eventsOf(async (s) => {
      for (let i = 0; i < 3; i++) await s.put(step(exec, i, { nodeOutput: 'theirs' }));
    }, 'laptop-z');
    const seeded = await call(`${plane.url}/v1/ingest`, {
      key,
      json: { protocol: 1, writerId: 'laptop-z', rows: theirs },
    });
    expect(seeded.body.accepted).toBe(3);
    // its writer no longer holds the run (its hold given up): our rows are judged by the chain, not refused as taken over
    await releaseHold(plane.url, key, exec, 'laptop-z');
    for (let i = 0; i < 5; i++) await store.put(grown(exec, i));
    const r = connect();
    // seqs 0-2 meet laptop-z's rows (seq_conflict); 3 and 4 follow them and are refused too (taken_over): no mixed copy
    expect(await r.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 5 });
    expect((await get(`/v1/executions/${exec}`)).body.execution).toMatchObject({
      complete: true,
      holeCount: 0,
      rowCount: 3,
      writerId: 'laptop-z',
    });

    const restored = await restoreFromPlane(other, exec, { url: plane.url, apiKey: key, pageSize: 2 });
    expect(restored).toMatchObject({ inserted: 3, diverged: [] });
    expect((await other.list(exec)).map((row) => row.id)).toEqual(theirs.map((e) => e.id));

    // the writing machine: `waymark sync status` names the run, by seq and as lost
    await r.stop();
    replica = null;
    const lines: string[] = [];
    expect(await main(['sync', 'status', '--db', tmp.file(`a${n}.db`)], (l) => lines.push(l))).toBe(0);
    const text = lines.join('\n');
    expect(text).toMatch(new RegExp(`refused by seq: 1 run\\(s\\): ${exec} \\(3 rows refused\\)`));
    expect(text).toMatch(
      new RegExp(
        `lost runs: +1 run\\(s\\) .*${exec}: execution ${exec}: row \\S+ follows row\\(s\\) of this batch the plane refused`,
      ),
    );
    const w = (await get('/v1/writers')).body.items.find((x: { writerId: string }) => x.writerId === store.writerId);
    expect(w.incompleteRuns).toEqual([]);
  });

  it('restore verifies before it reports success: a row missing from what the plane serves, or a chain that does not decode, is RESTORE_UNVERIFIED and nothing is imported', async () => {
    const r = connect();
    const [gap, bent, paused] = [`gap-${n}`, `bent-${n}`, `stale-${n}`];
    for (const exec of [gap, bent, paused]) for (let i = 0; i < 5; i++) await store.put(grown(exec, i));
    await store.recordInterrupt(pause(paused, 5), { reason: 'approval', context: null });
    await store.put(grown(paused + '-x', 0));
    expect(await r.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    // damage the plane's copy behind its back (a restored backup, a bad migration): it still believes the runs whole
    const db = plane.database.db;
    await db.execute(sql`DELETE FROM checkpoints WHERE execution_id = ${gap} AND seq = 3`);
    const rows = await store.list(bent);
    const delta = rows.find((x) => x.seq >= 2 && x.state.kind === 'delta')!;
    expect(delta).toBeDefined();
    await db.execute(
      sql`UPDATE checkpoints SET row = jsonb_set(row, '{state,prev}', to_jsonb(${rows[0].id}::text)) WHERE execution_id = ${bent} AND seq = ${delta.seq}`,
    );
    const stray = (await store.latest(paused + '-x'))!.id;
    await db.execute(
      sql`UPDATE pending_interrupts SET row = jsonb_set(row, '{checkpointId}', to_jsonb(${stray}::text)) WHERE execution_id = ${paused}`,
    );

    const g = await errorOf(restoreFromPlane(other, gap, { url: plane.url, apiKey: key, pageSize: 2 }));
    expect(g).toMatchObject({ code: 'RESTORE_UNVERIFIED', details: { missingSeqs: [3], upTo: 4 } });
    expect(g!.message).toContain('seq 3 missing');
    const b = await errorOf(restoreFromPlane(other, bent, { url: plane.url, apiKey: key }));
    expect(b).toMatchObject({ code: 'RESTORE_UNVERIFIED', details: { missingSeqs: [] } });
    expect(b!.message).toContain('the snapshot chain does not decode');
    const p = await errorOf(restoreFromPlane(other, paused, { url: plane.url, apiKey: key }));
    expect(p).toMatchObject({ code: 'RESTORE_UNVERIFIED' });
    expect(p!.message).toContain(`the pause is for row ${stray}, not the newest row (seq 5`);
    expect(await other.listExecutions()).toEqual([]);
  });
});
