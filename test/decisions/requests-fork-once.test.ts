/**
 * A fork request is forked once, by two workers on two stores, even when the
 * forker's claim runs out mid-fork: once the fork's first row is written the
 * plane keeps the request `started` (no longer open), so the other worker,
 * finding the claim expired, never claims it and never forks (its tools never
 * run). Real plane (PGlite, HTTP), SQLite files.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica, RequestOutcome } from '../../client/index.js';
import type { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { requestWorker, serveRequests as serve, until } from '../helpers/request-worker.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-requests-fork-once-');
let plane: TestPlane;
let key = '';
let operator = '';
const opened: { store: SqliteCheckpointer; replica: Replica }[] = [];
/** One line per run of the `work` tool: `<execution id> <writer id>`. */
const ledger: string[] = [];

/** A machine whose `work` tool, in a fork, waits for `hold` (when given) before it returns. */
const machine = (name: string, hold?: Promise<void>) => {
  const m = requestWorker({ planeUrl: plane.url, apiKey: key, path: tmp.file(`${name}.db`), ledger, hold });
  opened.push(m);
  return m;
};

beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('forks', ['ingest', 'read']);
  operator = await plane.key('forks', ['operate']);
});
afterAll(async () => {
  for (const { store, replica } of opened) {
    await replica.stop().catch(() => {});
    await store.close().catch(() => {});
  }
  await plane?.close();
  tmp.cleanup();
});

describe('a fork request served by two workers', () => {
  it('the other worker never forks, even once the forker’s claim has run out', async () => {
    let release: () => void = () => {};
    const a = machine('a', new Promise<void>((r) => (release = r)));
    const b = machine('b');
    expect((await a.agent.run('hello', { executionId: 'source' })).status).toBe('completed');
    await a.replica.flush({ timeoutMs: 10_000 });
    await b.replica.restore('source');
    const from = (await a.store.list('source', { limit: 100 })).find((r) => r.step === 'llm_call')!;
    const req = await call(`${plane.url}/v1/executions/source/requests`, {
      key: operator,
      json: { action: 'fork', checkpointId: from.id },
    });
    expect(req.status).toBe(201);
    const forkId = req.body.forkExecutionId as string;

    const seenA: RequestOutcome[] = [];
    const stopA = new AbortController();
    const servingA = serve(a, seenA, stopA);
    try {
      await until('a forks and its tool runs', () => ledger.includes(`${forkId} ${a.store.writerId}`));
      // a's claim runs out while its fork's tool is still running (its worker is slow, not dead)
      await plane.database.db.execute(
        sql`UPDATE run_requests SET claimed_at = now() - interval '1 hour' WHERE request_id = ${req.body.requestId}`,
      );
      const seenB: RequestOutcome[] = [];
      const stopB = new AbortController();
      const servingB = serve(b, seenB, stopB);
      await new Promise((r) => setTimeout(r, 1500));
      stopB.abort();
      await servingB;
      expect(await b.store.latest(forkId)).toBeNull();
      expect(ledger.filter((l) => l.startsWith(`${forkId} `))).toEqual([`${forkId} ${a.store.writerId}`]);
    } finally {
      release();
    }
    await until('a reports the fork applied', () => seenA.some((o) => o.outcome === 'applied'));
    stopA.abort();
    await servingA;
    const at = await call(`${plane.url}/v1/requests/${req.body.requestId}`, { key });
    expect(at.body).toMatchObject({ state: 'applied', settledBy: a.store.writerId, runStatus: 'completed' });
  }, 60_000);
});
