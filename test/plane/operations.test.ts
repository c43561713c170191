import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { createKey } from '../../plane/auth.js';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { call, startTestPlane } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const CHILD = fileURLToPath(new URL('./plane-child.ts', import.meta.url));
const pg = await pgReady('two plane processes on one postgres');

describe('plane back-pressure and outages', () => {
  it('queues a burst of batches and refuses (429, Retry-After) only past the queue or its wait', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = false;
    // one batch at a time, one may wait up to 5 s (long next to a request on a loaded machine: the third batch
    // below must be answered while the second still waits)
    const waitMs = 5000;
    const plane = await startTestPlane('pglite', {
      maxInflightIngest: 1,
      maxQueuedIngest: 1,
      ingestQueueWaitMs: waitMs,
      faults: (p) => (p === 'plane.ingest.afterCommit' ? ((held = true), gate) : undefined),
      metricsPort: 0,
    });
    // the operator's gauge of batches waiting for a slot: when a batch waits, seen rather than slept on
    const waiting = async () =>
      Number(
        /^waymark_ingest_waiting (\S+)$/m.exec(await (await fetch(`${plane.metricsUrl}/metrics`)).text())?.[1] ?? NaN,
      );
    try {
      const key = await plane.key('p', ['ingest']);
      const batch = async (id: string) => ({
        protocol: 1,
        writerId: 'w',
        rows: await eventsOf(async (s) => void (await s.put(step(id, 0)))),
      });
      const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map(batch));
      const first = call(`${plane.url}/v1/ingest`, { key, json: a });
      await until('the first batch holds the slot', () => held);
      const t0 = Date.now();
      let secondAnswered = false;
      const second = call(`${plane.url}/v1/ingest`, { key, json: b }).finally(() => (secondAnswered = true)); // waits its turn
      await until('the second batch waits for the slot', async () => (await waiting()) === 1);
      const third = await call(`${plane.url}/v1/ingest`, { key, json: c }); // the queue is full
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('1');
      // refused for the full queue, not after a wait of its own: answered while the second still waited
      expect(secondAnswered, 'the second batch was answered before the third').toBe(false);
      // the waiting batch gives up after its wait while the first still holds the slot
      expect((await second).status).toBe(429);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(waitMs - 100);
      // a batch that waits while the slot frees is admitted, and nothing was lost
      const fourth = call(`${plane.url}/v1/ingest`, { key, json: d });
      await until('the fourth batch waits for the slot', async () => (await waiting()) === 1);
      release();
      expect((await first).status).toBe(200);
      const fourthRes = await fourth;
      expect(fourthRes.status).toBe(200);
      expect((fourthRes.body as { accepted: number }).accepted).toBe(1);
    } finally {
      release();
      await plane.close();
    }
  });

  it.skipIf(!pg)('answers 503 with Retry-After while it cannot reach its database, and readyz says so', async () => {
    const db = await createTestDatabase('waymark_outage');
    const plane = await startTestPlane({ url: db.url });
    try {
      const key = await plane.key('p', ['ingest', 'read']);
      const rows = await eventsOf(async (s) => void (await s.put(step('o', 0))));
      await db.drop();
      const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows } });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('2');
      const ready = await call(`${plane.url}/readyz`);
      expect(ready.status).toBe(503);
      void key;
    } finally {
      await plane.close().catch(() => {});
    }
  });
});

describe.skipIf(!pg)('two plane processes on one Postgres', () => {
  let db: TestDatabase;
  let kids: ChildProcess[] = [];
  let urls: string[] = [];
  let key = '';
  beforeAll(async () => {
    db = await createTestDatabase('waymark_two_planes');
    kids = [forkTs(CHILD, [db.url]), forkTs(CHILD, [db.url])];
    urls = (
      await Promise.all(kids.map((k) => nextMessage<{ type: string; url: string }>(k, (m) => m.type === 'ready')))
    ).map((m) => m.url);
    const d = await openPlaneDatabase({ databaseUrl: db.url, max: 1 });
    key = (await createKey(d.db, { createProject: true, project: 'fleet', scopes: ['ingest', 'read'] })).key;
    await d.close();
  });
  afterAll(async () => {
    await Promise.all(
      kids.map(
        (k) =>
          new Promise<void>((r) => (k.exitCode !== null ? r() : (k.once('exit', () => r()), k.send({ type: 'exit' })))),
      ),
    );
    await db?.drop();
  });

  it('the same batch posted to both at once is stored once', async () => {
    const rows = await eventsOf(async (s) => {
      for (let i = 0; i < 300; i++) await s.put(step('shared', i));
    });
    const body = { protocol: 1, writerId: 'w', rows };
    const [a, b] = await Promise.all(urls.map((u) => call(`${u}/v1/ingest`, { key, json: body })));
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.accepted + b.body.accepted).toBe(300);
    expect(a.body.duplicate + b.body.duplicate).toBe(300);
    const page = await call(`${urls[0]}/v1/executions/shared/rows?limit=1000`, { key });
    expect(page.body.items.map((r: { seq: number }) => r.seq)).toEqual([...Array(300).keys()]);
  });

  it('16 concurrent claims across both planes: exactly one winner, 15 × 409 naming it', async () => {
    let checkpointId = '';
    const rows = await eventsOf(async (s) => {
      checkpointId = (await s.recordInterrupt(pause('contested'), { reason: 'r', context: null })).checkpoint.id;
    });
    await call(`${urls[0]}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows } });
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        call(`${urls[i % 2]}/v1/executions/contested/claim`, { key, json: { checkpointId, writerId: `writer-${i}` } }),
      ),
    );
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length).toBe(1);
    const losers = results.filter((r) => r.status === 409);
    expect(losers.length).toBe(15);
    for (const l of losers) expect(l.body.error.details.writerId).toBe(winners[0].body.writerId);
  });
});
