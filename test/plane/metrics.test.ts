/**
 * Operator metrics live on their own listener: process-wide counters span
 * every project, so a project's key (even an admin one) never reads them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createKey } from '../../plane/auth.js';
import { loadConfig } from '../../plane/config.js';
import { startPlane, type RunningPlane } from '../../plane/server.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { call, openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

describe('operator metrics listener', () => {
  let plane: RunningPlane | null = null;
  let database: PlaneDatabase | null = null;
  afterEach(async () => {
    await plane?.close();
    await database?.close();
    plane = database = null;
  });

  const start = async (env: NodeJS.ProcessEnv) => {
    database = await openTestPlaneDatabase('pglite');
    plane = await startPlane(loadConfig(env, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), {
      database,
      logger: pino({ level: 'silent' }),
    });
    return { plane, db: database.db };
  };

  it("metrics cross-tenant defect: a project admin key gets 404 for /metrics on the main listener; the metrics listener serves every project's counters", async () => {
    const { plane, db } = await start({ WAYMARK_METRICS_PORT: '0' });
    const alphaAdmin = (await createKey(db, { createProject: true, project: 'alpha', scopes: ['admin'] })).key;
    const betaIngest = (await createKey(db, { createProject: true, project: 'beta', scopes: ['ingest'] })).key;
    const rows = await eventsOf(async (s) => void (await s.put(step('beta-run', 0))));
    expect(
      (await call(`${plane.url}/v1/ingest`, { key: betaIngest, json: { protocol: 1, writerId: 'w', rows } })).status,
    ).toBe(200);

    const onMain = await call(`${plane.url}/metrics`, { key: alphaAdmin });
    expect(onMain.status).toBe(404);
    expect(onMain.body).toMatchObject({ error: { code: 'NOT_FOUND' } });

    expect(plane.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(plane.metricsUrl).not.toBe(plane.url);
    const m = await call(`${plane.metricsUrl}/metrics`);
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(m.body).toMatch(/waymark_ingest_rows_total\{result="accepted"\} 1/);
    expect(m.body).toMatch(/waymark_http_requests_total\{method="POST",route="\/v1\/ingest",status="200"\} 1/);
    expect(m.body).toMatch(/waymark_quarantine_rows 0/);
    // one batch, one transaction (its group of one); a second scrape counts nothing twice
    expect(m.body).toMatch(/waymark_ingest_transactions_total 1\n/);
    expect(m.body).toMatch(/waymark_ingest_batches_total 1\n/);
    expect((await call(`${plane.metricsUrl}/metrics`)).body).toMatch(/waymark_ingest_batches_total 1\n/);
    // the metrics listener serves metrics only: the API is not reachable through it
    expect((await call(`${plane.metricsUrl}/v1/executions`, { key: alphaAdmin })).status).toBe(404);
  }, 240_000);

  it('counts the entries each feed serves, at once and after a long poll', async () => {
    const { plane, db } = await start({ WAYMARK_METRICS_PORT: '0' });
    const key = (await createKey(db, { createProject: true, project: 'feeds', scopes: ['ingest', 'read'] })).key;
    const rows = await eventsOf(async (s) => {
      await s.put(step('feed-a', 0));
      await s.put(step('feed-b', 0));
    });
    expect((await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows } })).status).toBe(
      200,
    );
    const changes = await call(`${plane.url}/v1/changes?wait=0`, { key });
    expect(changes.body.items).toHaveLength(2);
    // a long poll answered by a change that commits while it waits
    const held = call(`${plane.url}/v1/changes?after=${changes.body.nextCursor}&wait=20`, { key });
    const more = await eventsOf(async (s) => void (await s.put(step('feed-c', 0))));
    expect(
      (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows: more } })).status,
    ).toBe(200);
    expect((await held).body.items).toHaveLength(1);
    expect((await call(`${plane.url}/v1/decisions?wait=0`, { key })).body.items).toEqual([]);
    const m = String((await call(`${plane.metricsUrl}/metrics`)).body);
    expect(m).toMatch(/^waymark_feed_entries_total\{feed="changes"\} 3$/m);
    expect(m).toMatch(/^waymark_feed_entries_total\{feed="decisions"\} 0$/m);
  }, 240_000);

  it('no metrics listener unless a metrics port is configured', async () => {
    const { plane } = await start({});
    expect(plane.metricsUrl).toBeNull();
  }, 240_000);

  it('`waymark plane --metrics-port` serves metrics on that listener and prints where; the bootstrap admin key gets 404 on the main one', async () => {
    const bin = fileURLToPath(new URL('../../bin/waymark.mjs', import.meta.url));
    const child = spawn(
      process.execPath,
      [bin, 'plane', '--data-dir', 'memory://', '--port', '0', '--metrics-port', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let out = '';
      child.stdout.on('data', (d) => (out += d.toString()));
      const deadline = Date.now() + 170_000;
      while (!/operator metrics: \S+/.test(out) && child.exitCode === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      const main = /listening on (\S+)/.exec(out)![1];
      const metrics = /operator metrics: (\S+)\/metrics/.exec(out)![1];
      const admin = /written nowhere: (\S+)/.exec(out)![1];
      expect(metrics).not.toBe(main);
      expect((await call(`${main}/metrics`, { key: admin })).status).toBe(404);
      const m = await call(`${metrics}/metrics`);
      expect(m.status).toBe(200);
      expect(m.body).toMatch(/waymark_quarantine_rows 0/);
      // OPERATIONS.md's `grep waymark_ingest_rows_total` on a plane that has ingested nothing since it started: HELP and TYPE only
      expect(
        String(m.body)
          .split('\n')
          .filter((l: string) => l.includes('waymark_ingest_rows_total')),
      ).toEqual([
        expect.stringMatching(/^# HELP waymark_ingest_rows_total /),
        expect.stringMatching(/^# TYPE waymark_ingest_rows_total counter$/),
      ]);
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 240_000);

  it('the metrics host defaults to loopback and a bad metrics port is refused by name', () => {
    expect(loadConfig({ WAYMARK_METRICS_PORT: '9464' })).toMatchObject({ metricsHost: '127.0.0.1', metricsPort: 9464 });
    expect(() => loadConfig({ WAYMARK_METRICS_PORT: 'nine' })).toThrow(/WAYMARK_METRICS_PORT/);
  });
});
