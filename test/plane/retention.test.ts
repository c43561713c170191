/**
 * Retention: `POST /v1/admin/prune`, `waymark plane
 * prune` and the WAYMARK_RETENTION_DAYS schedule, on PGlite and on Postgres;
 * and the PGlite backup: copy a stopped plane's data dir, start a plane on it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { sql } from 'drizzle-orm';
import { planeMain } from '../../plane/cli.js';
import { loadConfig } from '../../plane/config.js';
import { startPlane } from '../../plane/server.js';
import { createKey } from '../../plane/auth.js';
import { call, openTestPlaneDatabase, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-retention-');
afterAll(() => tmp.cleanup());
const pg = await pgReady('retention on postgres');

/** The rows of a run in each state: finished ones end with a run_end marker. */
async function runRows(id: string, end: 'completed' | 'failed' | 'paused' | 'running') {
  return eventsOf(async (s) => {
    await s.put(step(id, 0));
    if (end === 'paused') await s.recordInterrupt(pause(id, 1), { reason: 'approve', context: {} });
    else if (end !== 'running') await s.put({ ...step(id, 1), nodeId: 'run_end', step: 'run_end', status: end });
  }, `w-${id}`);
}

const DAY = 86_400;

function retentionSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`retention on ${name}`, () => {
    let plane: TestPlane;
    let admin: string;
    let read: string;
    let ingestKey: string;
    let otherIngest: string;
    let arriving: unknown[] = [];
    const ingest = async (key: string, rows: unknown[]) =>
      expect(
        (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows } })).body.rejected,
      ).toBe(0);
    const age = (ids: string[], days: number) =>
      plane.database.db.execute(
        sql`UPDATE executions SET updated_at = now() - ${days} * interval '1 day' WHERE execution_id IN (${sql.join(
          ids.map((i) => sql`${i}`),
          sql`, `,
        )})`,
      );
    const exists = async (id: string, key = read) =>
      (await call(`${plane.url}/v1/executions/${id}`, { key })).status === 200;

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      admin = await plane.key('alpha', ['admin']);
      read = await plane.key('alpha', ['read']);
      ingestKey = await plane.key('alpha', ['ingest']);
      otherIngest = await plane.key('beta', ['ingest', 'read']);
      for (const [id, end] of [
        ['done-old', 'completed'],
        ['failed-old', 'failed'],
        ['paused-old', 'paused'],
        ['running-old', 'running'],
        ['done-new', 'completed'],
      ] as const) {
        await ingest(ingestKey, await runRows(id, end));
      }
      // a finished run whose middle row is still on its way: seq 0 and the end marker (seq 2) are here, seq 1 comes later
      arriving = await eventsOf(async (s) => {
        for (let i = 0; i < 2; i++) await s.put(step('arriving-old', i));
        await s.put({ ...step('arriving-old', 2), nodeId: 'run_end', step: 'run_end' });
      }, 'w-arriving');
      await ingest(
        ingestKey,
        arriving.filter((e) => (e as { row?: { seq: number } }).row?.seq !== 1),
      );
      await ingest(otherIngest, await runRows('beta-done-old', 'completed'));
      await age(['done-old', 'failed-old', 'paused-old', 'running-old', 'arriving-old', 'beta-done-old'], 40);
    });
    afterAll(async () => plane?.close());

    it("dry run lists only the finished runs older than the age, of the admin key's project, and deletes nothing", async () => {
      const r = await call(`${plane.url}/v1/admin/prune`, {
        key: admin,
        json: { olderThanSeconds: 30 * DAY, dryRun: true },
      });
      expect(r.status).toBe(200);
      expect(r.body.dryRun).toBe(true);
      expect(r.body.items.map((i: { executionId: string }) => i.executionId).sort()).toEqual([
        'arriving-old',
        'done-old',
        'failed-old',
      ]);
      for (const id of ['done-old', 'failed-old', 'arriving-old']) expect(await exists(id)).toBe(true);
    });

    it('bad input: an age under 1h, an unknown project: a clear error, nothing deleted', async () => {
      const short = await call(`${plane.url}/v1/admin/prune`, { key: admin, json: { olderThanSeconds: 60 } });
      expect(short.status).toBe(400);
      const other = await call(`${plane.url}/v1/admin/prune`, {
        key: admin,
        json: { olderThanSeconds: 30 * DAY, project: 'beta' },
      });
      expect(other.status).toBe(404);
      expect(other.body.error).toMatchObject({ code: 'UNKNOWN_PROJECT', details: { known: ['alpha'] } });
      expect(await exists('done-old')).toBe(true);
      expect(await exists('beta-done-old', otherIngest)).toBe(true);
    });

    it("retention defect guard: prunes finished old runs with every row; never a paused, running, recent run, one with rows arriving, or another project's", async () => {
      // a row arrives for an old finished run (a late redelivery): it is updated now, so it stays
      const late = arriving.filter((e) => (e as { row?: { seq: number } }).row?.seq === 1);
      expect(late).toHaveLength(1);
      await ingest(ingestKey, late);
      expect((await call(`${plane.url}/v1/executions/arriving-old`, { key: read })).body.execution).toMatchObject({
        status: 'completed',
        rowCount: 3,
      });
      const r = await call(`${plane.url}/v1/admin/prune`, { key: admin, json: { olderThanSeconds: 30 * DAY } });
      expect(r.status).toBe(200);
      expect(r.body.items.map((i: { executionId: string }) => i.executionId).sort()).toEqual([
        'done-old',
        'failed-old',
      ]);
      expect(r.body.items[0]).toMatchObject({ project: 'alpha', rowCount: 2 });
      for (const id of ['done-old', 'failed-old']) {
        expect(await exists(id)).toBe(false);
        expect((await call(`${plane.url}/v1/executions/${id}/rows`, { key: read })).status).toBe(404);
      }
      const left = await plane.database.db.execute(
        sql`SELECT count(*)::int AS n FROM checkpoints WHERE execution_id IN ('done-old', 'failed-old')`,
      );
      expect(((Array.isArray(left) ? left : (left as { rows: unknown[] }).rows)[0] as { n: number }).n).toBe(0);
      for (const id of ['paused-old', 'running-old', 'done-new', 'arriving-old'])
        expect(await exists(id), id).toBe(true);
      expect(await exists('beta-done-old', otherIngest)).toBe(true);
    });

    it('waymark plane prune --older-than through the running plane: dry run, then prune, reporting what went', async () => {
      const operator = await plane.key('ops', ['admin', 'operator']);
      const lines: string[] = [];
      const dry = await planeMain(
        ['prune', '--older-than', '30d', '--project', 'beta', '--dry-run', '--plane', plane.url, '--key', operator],
        (l) => lines.push(l),
      );
      expect(dry).toBe(0);
      expect(lines.join('\n')).toMatch(/would prune\s+beta\s+beta-done-old\s+completed/);
      expect(await exists('beta-done-old', otherIngest)).toBe(true);
      lines.length = 0;
      expect(
        await planeMain(['prune', '--older-than', '30d', '--plane', plane.url, '--key', operator], (l) =>
          lines.push(l),
        ),
      ).toBe(0);
      expect(lines.join('\n')).toMatch(/pruned\s+beta\s+beta-done-old/);
      expect(lines.at(-1)).toMatch(/^pruned 1 finished run\(s\) last updated before /);
      expect(await exists('beta-done-old', otherIngest)).toBe(false);
      lines.length = 0;
      expect(
        await planeMain(['prune', '--older-than', '10m', '--plane', plane.url, '--key', operator], (l) =>
          lines.push(l),
        ),
      ).toBe(2);
      expect(lines.join('\n')).toContain("option '--older-than' must be at least 1h");
    });

    it('WAYMARK_RETENTION_DAYS prunes on a schedule and logs what it deleted', async () => {
      const database = await openTestPlaneDatabase(kind());
      const { key } = await createKey(database.db, {
        createProject: true,
        project: 'sched',
        scopes: ['ingest', 'read'],
      });
      const logs: string[] = [];
      const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (logs.push(String(c)), cb()) }));
      const config = loadConfig(
        { WAYMARK_RETENTION_DAYS: '7', WAYMARK_RETENTION_INTERVAL_MS: '200' },
        { host: '127.0.0.1', port: 0, dataDir: 'memory://' },
      );
      expect(config.retentionDays).toBe(7);
      const p = await startPlane(config, { database, logger });
      try {
        for (const [id, end] of [
          ['sched-old', 'completed'],
          ['sched-paused', 'paused'],
          ['sched-recent', 'failed'],
        ] as const) {
          expect(
            (
              await call(`${p.url}/v1/ingest`, {
                key,
                json: { protocol: 1, writerId: 'w', rows: await runRows(id, end) },
              })
            ).body.rejected,
          ).toBe(0);
        }
        await database.db.execute(
          sql`UPDATE executions SET updated_at = now() - interval '8 days' WHERE execution_id IN ('sched-old', 'sched-paused')`,
        );
        await database.db.execute(
          sql`UPDATE executions SET updated_at = now() - interval '6 days' WHERE execution_id = 'sched-recent'`,
        );
        await expect
          .poll(async () => (await call(`${p.url}/v1/executions/sched-old`, { key })).status, {
            timeout: 60_000,
            interval: 100,
          })
          .toBe(404);
        expect((await call(`${p.url}/v1/executions/sched-paused`, { key })).status).toBe(200);
        expect((await call(`${p.url}/v1/executions/sched-recent`, { key })).status).toBe(200);
        await expect
          .poll(() => logs.some((l) => l.includes('sched/sched-old') && l.includes('retention: pruned 1')), {
            timeout: 60_000,
          })
          .toBe(true);
      } finally {
        await p.close();
        await database.close();
      }
    });
  });
}

retentionSuite('PGlite', () => 'pglite');
describe.skipIf(!pg)('on Postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_retention');
  });
  afterAll(async () => db?.drop());
  retentionSuite('Postgres', () => ({ url: db.url }));
});

describe('backup and restore of a PGlite plane', () => {
  it('copy the data dir of a stopped plane, start a plane on the copy: the runs and keys are there', async () => {
    const dir = tmp.file('plane-data');
    const config = loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: dir, logLevel: 'silent' });
    const a = await startPlane(config, { logger: pino({ level: 'silent' }) });
    const { key } = await createKey(a.database.db, { project: 'local', scopes: ['ingest', 'read'] });
    expect(
      (
        await call(`${a.url}/v1/ingest`, {
          key,
          json: { protocol: 1, writerId: 'w', rows: await runRows('backed-up', 'completed') },
        })
      ).body.rejected,
    ).toBe(0);
    await a.close();
    const copy = tmp.file('plane-data-restored');
    cpSync(dir, copy, { recursive: true });
    expect(existsSync(copy)).toBe(true);
    const b = await startPlane({ ...config, dataDir: copy }, { logger: pino({ level: 'silent' }) });
    try {
      const r = await call(`${b.url}/v1/executions/backed-up`, { key });
      expect(r.status).toBe(200);
      expect(r.body.execution).toMatchObject({ status: 'completed', rowCount: 2 });
      expect(b.adminKeyFile).toBeNull(); // not a first start: the copy has its project and keys
    } finally {
      await b.close();
    }
  });
});
