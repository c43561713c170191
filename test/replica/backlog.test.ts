import { afterAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-backlog-');
afterAll(() => tmp.cleanup());

describe('offline for a while, then back', () => {
  it('a 100,000-row backlog drains to zero with no duplicates, never loading it at once', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('backlog.db'), synchronous: 'NORMAL' });
    const N = 100_000;
    const RUNS = 50;
    // offline: a backlog builds up with nowhere to go (the 50 runs step at once, as a
    // server's runs do, so their puts share group commits: the fill is not what is tested)
    for (let t = 0; t < N / RUNS; t++) {
      await Promise.all(
        Array.from({ length: RUNS }, (_, run) =>
          store.put({
            executionId: `run-${run}`,
            nodeId: `turn:${t}`,
            turn: t,
            step: 'llm_call',
            status: 'completed',
            agentPath: 'agent:b',
            state: { turn: t },
          }),
        ),
      );
    }
    expect((await store.outboxStats()).pendingCount).toBe(N);

    const plane = await startTestPlane('pglite');
    const key = await plane.key('b', ['ingest', 'read']);
    const fetchLimits: number[] = [];
    const fetch = store.fetchUnsynced.bind(store);
    store.fetchUnsynced = async (o) => {
      fetchLimits.push(o.limit);
      return fetch(o);
    };
    const base = process.memoryUsage().heapUsed;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
    const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0 });
    const progress: number[] = [];
    replica.on('ack', async () => progress.push((await store.outboxStats()).pendingCount));
    try {
      // generous: a busy 2-core machine drains this backlog several times slower than an idle one
      const s = await replica.flush({ timeoutMs: 540_000 });
      expect(s).toMatchObject({ pendingRows: 0, quarantinedCount: 0, rowsSynced: N });
      expect(Math.max(...fetchLimits)).toBeLessThanOrEqual(500);
      // the backlog would take hundreds of MB as objects; the drain holds one batch at a time
      expect(peak - base).toBeLessThan(96 * 1024 * 1024);
      let total = 0;
      for (let r = 0; r < RUNS; r++) {
        const e = await call(`${plane.url}/v1/executions/run-${r}`, { key });
        expect(e.body.execution.rowCount).toBe(N / RUNS);
        total += e.body.execution.rowCount;
      }
      expect(total).toBe(N);
      const w = (await call(`${plane.url}/v1/writers`, { key })).body.items[0];
      expect(w).toMatchObject({ rowsAcked: N, backlogRows: 0 });
    } finally {
      clearInterval(sampler);
      await replica.stop();
      await plane.close();
      await store.close();
    }
  }, 720_000);
});
