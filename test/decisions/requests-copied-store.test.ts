/**
 * A fork request served by two copies of one store file: one writer id, two
 * store instances (a copied SQLite file, as a restored backup or a `cp` makes).
 * The plane's claim of a fork request is held by one instance: while the
 * original's claim holds (its worker stalled between claim and fork), the
 * copy is answered `lost` and never forks; the original then forks once. Real plane (PGlite, HTTP),
 * SQLite files.
 */
import { copyFileSync, existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica, RequestOutcome } from '../../client/index.js';
import type { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { requestWorker, serveRequests as serve, until } from '../helpers/request-worker.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-requests-copied-store-');
let plane: TestPlane;
let key = '';
let operator = '';
const opened: { store: SqliteCheckpointer; replica: Replica }[] = [];
/** One line per run of the `work` tool: `<execution id> <store file>`. */
const ledger: string[] = [];

/** A store on `file` (writer id `laptop`) serving the plane's requests. */
const machine = (file: string) => {
  const m = requestWorker({
    planeUrl: plane.url,
    apiKey: key,
    path: tmp.file(file),
    writerId: 'laptop',
    ledger,
    tag: file,
  });
  opened.push(m);
  return m;
};

beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('copies', ['ingest', 'read']);
  operator = await plane.key('copies', ['operate']);
});
afterAll(async () => {
  for (const { store, replica } of opened) {
    await replica.stop().catch(() => {});
    await store.close().catch(() => {});
  }
  await plane?.close();
  tmp.cleanup();
});

describe('a fork request served by two copies of one store file', () => {
  it('the copy never forks while the original holds the claim: the fork runs in one store', async () => {
    // the source run, synced; then the file is copied: two stores under one writer id
    const first = machine('a.db');
    expect((await first.agent.run('hello', { executionId: 'source' })).status).toBe('completed');
    expect((await first.replica.flush({ timeoutMs: 30_000 })).pendingRows).toBe(0);
    const from = (await first.store.list('source', { limit: 100 })).find((r) => r.step === 'llm_call')!;
    await first.replica.stop();
    await first.store.close();
    for (const suffix of ['', '-wal', '-shm'])
      if (existsSync(tmp.file(`a.db${suffix}`))) copyFileSync(tmp.file(`a.db${suffix}`), tmp.file(`copy.db${suffix}`));

    const a = machine('a.db');
    const copy = machine('copy.db');
    expect(copy.store.writerId).toBe(a.store.writerId);
    expect(copy.store.instanceId).not.toBe(a.store.instanceId);

    const req = await call(`${plane.url}/v1/executions/source/requests`, {
      key: operator,
      json: { action: 'fork', checkpointId: from.id },
    });
    expect(req.status, JSON.stringify(req.body)).toBe(201);
    const forkId = req.body.forkExecutionId as string;

    // the original's worker claims the fork and stalls before forking (a stopped process, a slow disk)
    expect((await a.replica.claimRequest(req.body.requestId)).outcome).toBe('won');
    // an older client under the same writer id (it sends no instance) asks again: won, and the claim keeps its instance
    const older = await call(`${plane.url}/v1/requests/${req.body.requestId}/claim`, {
      key,
      json: { writerId: a.store.writerId },
    });
    expect([older.status, older.body.outcome]).toEqual([200, 'won']);
    // the copy asks for the same claim: another store instance, though the same writer id
    expect((await copy.replica.claimRequest(req.body.requestId)).outcome).toBe('lost');
    // and its worker, serving meanwhile, never forks
    const seenCopy: RequestOutcome[] = [];
    const stopCopy = new AbortController();
    const servingCopy = serve(copy, seenCopy, stopCopy);
    await new Promise((r) => setTimeout(r, 1500));
    stopCopy.abort();
    await servingCopy;
    expect(await copy.store.latest(forkId)).toBeNull();
    expect(ledger.filter((l) => l.startsWith(`${forkId} `))).toEqual([]);

    // the original wakes and forks: once, in its own store
    const seenA: RequestOutcome[] = [];
    const stopA = new AbortController();
    const servingA = serve(a, seenA, stopA);
    await until('the original reports the fork applied', () => seenA.some((o) => o.outcome === 'applied'));
    stopA.abort();
    await servingA;
    expect(ledger.filter((l) => l.startsWith(`${forkId} `))).toEqual([`${forkId} a.db`]);
    const at = await call(`${plane.url}/v1/requests/${req.body.requestId}`, { key });
    expect(at.body).toMatchObject({ state: 'applied', settledBy: a.store.writerId, runStatus: 'completed' });
  }, 120_000);
});
