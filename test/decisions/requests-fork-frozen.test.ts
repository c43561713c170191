/**
 * A fork request whose forker is frozen (SIGSTOP) between the fork's first
 * durable row and its `started` report reaching the plane: the report left
 * the process and is held by a proxy in front of the plane while the process
 * is stopped. The claim holds meanwhile, so the other worker, finding the
 * request open, loses every claim it makes and never forks (its tool never
 * runs). Once the forker resumes, its report lands (`started`, by it), then its
 * fork ends and the request is applied by it; the other worker reports it
 * applied elsewhere. One fork, one run of its tool. Two application processes
 * (test/decisions/request-worker-child.ts), a real plane (PGlite, HTTP), a
 * proxy per process (test/helpers/fault-proxy.ts), SQLite files.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

const CHILD = fileURLToPath(new URL('./request-worker-child.ts', import.meta.url));
type Msg = { type: string; [k: string]: unknown };

const tmp = scratchDir('waymark-requests-fork-frozen-');
let plane: TestPlane;
const keys: Record<string, string> = {};
const kids: ChildProcess[] = [];
const proxies: FaultProxy[] = [];
const outcomes: Msg[] = [];
const ledger = tmp.file('ledger');
const holdFile = tmp.file('hold');

/** An application process connected to the plane through its own proxy. */
const start = async (name: string) => {
  const proxy = await new FaultProxy(plane.url).start();
  proxies.push(proxy);
  const child = forkTs(CHILD, [tmp.file(`${name}.db`), proxy.url, keys.app, tmp.file('fail'), ledger, holdFile]);
  child.stderr?.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
  child.on('message', (m: Msg) => {
    if (m.type === 'outcome') outcomes.push(m);
  });
  kids.push(child);
  const ready = await nextMessage<Msg>(child, (m) => m.type === 'ready');
  return { child, proxy, writerId: ready.writerId as string, db: tmp.file(`${name}.db`) };
};
const serve = async (child: ChildProcess) => {
  const serving = nextMessage<Msg>(child, (m) => m.type === 'serving');
  child.send({ type: 'serve' });
  await serving;
};
const stop = async (child: ChildProcess): Promise<Msg> => {
  const stopped = nextMessage<Msg>(child, (m) => m.type === 'stopped');
  child.send({ type: 'stop' });
  return stopped;
};
const planeRequest = async (requestId: string) =>
  (await call(`${plane.url}/v1/requests/${requestId}`, { key: keys.reader })).body;
const lines = () => readFileSync(ledger, 'utf8').trim().split('\n').filter(Boolean);

beforeAll(async () => {
  plane = await startTestPlane('pglite');
  keys.app = await plane.key('frozen', ['ingest', 'read']);
  keys.reader = await plane.key('frozen', ['read']);
  keys.operator = await plane.key('frozen', ['operate']);
}, 60_000);
afterAll(async () => {
  for (const k of kids) {
    if (k.exitCode !== null) continue;
    k.kill('SIGCONT');
    k.kill('SIGKILL');
  }
  for (const p of proxies) await p.close();
  await plane?.close();
  tmp.cleanup();
});

describe('a forker frozen before its started report reaches the plane', () => {
  it('the other worker loses the claim and never forks; once resumed, the report lands and the fork is applied once', async () => {
    const a = await start('a');
    const b = await start('b');
    writeFileSync(ledger, '');
    const ran = nextMessage<Msg>(a.child, (m) => m.type === 'ran');
    a.child.send({ type: 'run', executionId: 'source' });
    expect((await ran).status).toBe('completed');
    const restore = await call(`${plane.url}/v1/executions/source/restore`, { key: keys.reader });
    const from = (restore.body.rows as { id: string; step: string }[]).find((r) => r.step === 'llm_call')!;

    // a's first report of a run request is its fork's `started` (sent once the fork's first row is written): a is
    // stopped as it arrives at the proxy, and the report waits there until a goes on
    let thaw: () => void = () => {};
    const thawed = new Promise<void>((r) => (thaw = r));
    let frozen = false;
    a.proxy.rule = ({ path }) => {
      if (frozen || !/^\/v1\/requests\/[^/]+\/outcome$/.test(path)) return undefined;
      frozen = true;
      a.child.kill('SIGSTOP');
      return { holdRequest: thawed };
    };
    // the fork's tool, when it runs, waits until the test lets it end
    writeFileSync(holdFile, '');
    await serve(a.child);
    const req = await call(`${plane.url}/v1/executions/source/requests`, {
      key: keys.operator,
      json: { action: 'fork', checkpointId: from.id },
    });
    expect(req.status).toBe(201);
    const { requestId, forkExecutionId } = req.body as { requestId: string; forkExecutionId: string };
    try {
      await until('a is frozen with its started report on its way', () => frozen);
      expect(await planeRequest(requestId)).toMatchObject({ state: 'open', claimedBy: a.writerId });

      // b serves meanwhile: the request is open, a's claim holds, b loses it pass after pass
      await serve(b.child);
      const claims = () => b.proxy.seen.filter((r) => r.path === `/v1/requests/${requestId}/claim`).length;
      const forkedByB = () => lines().filter((l) => l === `${forkExecutionId} ${b.writerId}`);
      await until('b lost the claim twice (or forked)', () => claims() >= 2 || forkedByB().length > 0);
      expect(forkedByB()).toEqual([]);
      expect(await planeRequest(requestId)).toMatchObject({ state: 'open', claimedBy: a.writerId });
    } finally {
      a.child.kill('SIGCONT');
      thaw();
    }
    // the report lands: started, by a (its fork's tool still held)
    await until('the plane has the fork started by a', async () => {
      const now = await planeRequest(requestId);
      return now.state === 'started' && now.settledBy === a.writerId;
    });
    rmSync(holdFile);
    await until('a reports the fork applied', () =>
      outcomes.some((o) => o.requestId === requestId && o.writerId === a.writerId && o.outcome === 'applied'),
    );
    await until('b reports it applied elsewhere', () =>
      outcomes.some((o) => o.requestId === requestId && o.writerId === b.writerId && o.outcome !== 'failed'),
    );
    const summaryB = (await stop(b.child)).summary as { requests: { applied: number } };
    await stop(a.child);

    expect(outcomes.filter((o) => o.requestId === requestId && o.outcome !== 'failed')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ writerId: a.writerId, outcome: 'applied', status: 'completed' }),
        expect.objectContaining({ writerId: b.writerId, outcome: 'applied_elsewhere', appliedBy: a.writerId }),
      ]),
    );
    expect(summaryB.requests.applied).toBe(0);
    // one fork: its tool ran once, by a; b's store holds none of it; the plane's copy is a's alone
    expect(lines().filter((l) => l.startsWith(`${forkExecutionId} `))).toEqual([`${forkExecutionId} ${a.writerId}`]);
    const storeB = new SqliteCheckpointer({ path: b.db });
    try {
      expect(await storeB.latest(forkExecutionId)).toBeNull();
    } finally {
      await storeB.close();
    }
    const forkAtPlane = await call(`${plane.url}/v1/executions/${forkExecutionId}/restore`, { key: keys.reader });
    expect(forkAtPlane.status).toBe(200);
    expect(new Set((forkAtPlane.body.rows as { writerId: string }[]).map((r) => r.writerId))).toEqual(
      new Set([a.writerId]),
    );
    expect(await planeRequest(requestId)).toMatchObject({
      state: 'applied',
      settledBy: a.writerId,
      runStatus: 'completed',
    });
  }, 180_000);
});
