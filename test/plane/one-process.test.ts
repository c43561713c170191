/**
 * Issue 13 item 1 (and 8): one process per PGlite data dir, keys through the
 * running plane, revocation refused within 1 s by every plane process. Real
 * `bin/waymark.mjs` processes, real HTTP, real PGlite folders and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirLocked } from '../../plane/db/lock.js';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { call } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { refusedWithin, startPlaneProcess, waymarkAsync, type PlaneProcess } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-one-process-');
const running: PlaneProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.kill()));
  tmp.cleanup();
});

const keyOf = (stdout: string) => stdout.trim().split('\n').pop()!;
const idOf = (key: string) => key.slice(3, 19);

describe('one process per PGlite data dir', () => {
  it('second process defect: keys made while the plane runs go through it: accepted at once, revoked within 1 s, both kept across a restart', async () => {
    const dir = tmp.file('pglite-live');
    const plane = await startPlaneProcess(['--data-dir', dir]);
    running.push(plane);
    expect(plane.stdout()).toContain(`written to ${join(dir, 'admin-key')}`);

    // the OPERATIONS line, with the plane running: before the fix this opened the live folder a second time
    const created = await waymarkAsync([
      'plane',
      'keys',
      'create',
      '--project',
      'local',
      '--scopes',
      'ingest,read',
      '--data-dir',
      dir,
    ]);
    expect(created.code, created.stderr).toBe(0);
    // it says where the key was made: a stopped plane's data dir is not the running plane's
    expect(created.stdout).toContain(`, made through the plane at ${plane.url}; shown once`);
    const key = keyOf(created.stdout);
    expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);

    const list = await waymarkAsync(['plane', 'keys', 'list', '--data-dir', dir]);
    expect(list.stdout).toMatch(new RegExp(`${idOf(key)}\\s+local\\s+ingest,read\\s+key\\s+active`));

    const revoked = await waymarkAsync(['plane', 'keys', 'revoke', idOf(key), '--data-dir', dir]);
    expect(revoked.stdout.trim()).toMatch(new RegExp(`^revoked ${idOf(key)} through `));
    // "revoked within 1 s": every request sent 1 s or more after the revoke command returned is refused
    // (judged by when it was sent, not by how fast a loaded machine answered it)
    await refusedWithin(
      async () => (await call(`${plane.url}/v1/executions`, { key })).status,
      performance.now(),
      1000,
    );

    await plane.stop();
    // no plane now: the command opens the folder itself, and the revocation is still there
    const after = await waymarkAsync(['plane', 'keys', 'list', '--data-dir', dir]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toMatch(new RegExp(`${idOf(key)}\\s+local\\s+ingest,read\\s+key\\s+revoked `));
    const again = await startPlaneProcess(['--data-dir', dir]);
    running.push(again);
    expect((await call(`${again.url}/v1/executions`, { key })).status).toBe(401);
    await again.stop();
  });

  it('a second plane, or any process opening the data dir, gets DATA_DIR_LOCKED naming the holder (pid, url); a SIGKILLed holder leaves a stale lock the next plane takes', async () => {
    const dir = tmp.file('pglite-locked');
    const first = await startPlaneProcess(['--data-dir', dir]);
    running.push(first);
    const lock = JSON.parse(readFileSync(join(dir, 'plane.lock'), 'utf8'));
    expect(lock).toMatchObject({ pid: first.child.pid, url: first.url, command: 'waymark plane' });

    const second = await waymarkAsync(['plane', '--data-dir', dir, '--port', '0']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `waymark: DATA_DIR_LOCKED: the plane data dir ${dir} is in use by process ${first.child.pid} (a plane serving ${first.url}`,
    );
    expect(second.stderr).toMatch(/one process per data dir: manage keys and projects through it/);

    // another data dir on the first plane's port: PORT_IN_USE naming the variable, and its own data dir is given back
    const port = new URL(first.url).port;
    const other = tmp.file('pglite-port-taken');
    const taken = await waymarkAsync(['plane', '--data-dir', other, '--port', port]);
    expect([taken.code, taken.stderr]).toEqual([
      1,
      expect.stringContaining(
        `waymark: PORT_IN_USE: port ${port} on 127.0.0.1 is in use (another plane?); choose another with --port or WAYMARK_PORT, or 0 for a free one`,
      ),
    ]);
    expect(taken.stderr).not.toMatch(/Unhandled 'error' event/);
    // started by `npm start`, whose flags npm takes as its own: the hint is the npm line that works
    const viaNpm = await waymarkAsync(['plane', '--data-dir', other, '--port', port], {
      env: { npm_lifecycle_event: 'start' },
    });
    expect([viaNpm.code, viaNpm.stderr]).toEqual([
      1,
      expect.stringContaining(
        `is in use (another plane?); choose another with --port or WAYMARK_PORT, or 0 for a free one (under npm start: 'npm start -- --port N' or 'WAYMARK_PORT=N npm start')`,
      ),
    ]);
    const elsewhere = await startPlaneProcess(['--data-dir', other]);
    running.push(elsewhere);
    await elsewhere.stop();

    const direct = await openPlaneDatabase({ dataDir: dir }).then(
      (d) => d.close().then(() => null),
      (e) => e,
    );
    expect(direct).toBeInstanceOf(DataDirLocked);
    expect(direct).toMatchObject({ code: 'DATA_DIR_LOCKED', details: { pid: first.child.pid, url: first.url } });
    expect((await call(`${first.url}/readyz`)).status).toBe(200);

    await first.kill();
    expect(existsSync(join(dir, 'plane.lock'))).toBe(true);
    const next = await startPlaneProcess(['--data-dir', dir]);
    running.push(next);
    expect(JSON.parse(readFileSync(join(dir, 'plane.lock'), 'utf8'))).toMatchObject({
      pid: next.child.pid,
      url: next.url,
    });
    const adminKey = readFileSync(join(dir, 'admin-key'), 'utf8').trim();
    expect((await call(`${next.url}/v1/admin/keys`, { key: adminKey })).status).toBe(200);
    await next.stop();
    expect(existsSync(join(dir, 'plane.lock'))).toBe(false);
  }, 480_000); // three fresh PGlite planes and four more processes: minutes on a loaded 2-core machine
});

const pg = await pgReady('one process per data dir on postgres');

describe.skipIf(!pg)('keys and revocation on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_keys');
  });
  afterAll(async () => db?.drop());

  it('admin key location defect: on Postgres the admin key is <data dir>/admin-key, printed absolute, never relative to the working directory', async () => {
    const cwd = tmp.file('pg-cwd');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(cwd, { recursive: true });
    const plane = await startPlaneProcess(['--database-url', db.url, '--data-dir', 'pdata'], { cwd });
    running.push(plane);
    try {
      const file = join(cwd, 'pdata', 'admin-key');
      expect(plane.stdout()).toContain(`written to ${file} (mode 0600)`);
      expect(existsSync(join(cwd, '.waymark'))).toBe(false);
      expect(
        (await call(`${plane.url}/v1/admin/projects`, { key: readFileSync(file, 'utf8').trim() })).body.items.map(
          (p: { name: string }) => p.name,
        ),
      ).toEqual(['local']);
    } finally {
      await plane.stop();
    }
    const again = await startPlaneProcess(['--database-url', db.url, '--data-dir', 'pdata'], { cwd });
    running.push(again);
    expect(again.stdout()).toContain(`admin key: ${join(cwd, 'pdata', 'admin-key')}`);
    await again.stop();
  });

  it('two planes starting at once on an empty Postgres both serve; exactly one made the bootstrap key', async () => {
    const fresh = await createTestDatabase('waymark_keys_twin');
    try {
      const dirs = [tmp.file('twin-a'), tmp.file('twin-b')];
      const planes = await Promise.all(
        dirs.map((d) => startPlaneProcess(['--database-url', fresh.url, '--data-dir', d])),
      );
      running.push(...planes);
      expect(dirs.filter((d) => existsSync(join(d, 'admin-key')))).toHaveLength(1);
      const key = readFileSync(join(dirs.find((d) => existsSync(join(d, 'admin-key')))!, 'admin-key'), 'utf8').trim();
      for (const p of planes) expect((await call(`${p.url}/v1/admin/keys`, { key })).body.items).toHaveLength(1);
      await Promise.all(planes.map((p) => p.stop()));
    } finally {
      await fresh.drop();
    }
  });

  it('revocation defect: a key revoked through one plane is refused by both plane processes on one Postgres within 1 s', async () => {
    const dirA = tmp.file('pg-a');
    const a = await startPlaneProcess(['--database-url', db.url, '--data-dir', dirA]);
    running.push(a);
    const b = await startPlaneProcess(['--database-url', db.url, '--data-dir', tmp.file('pg-b')]);
    running.push(b);
    const adminFile = join(tmp.dir, 'pg-cwd', 'pdata', 'admin-key');
    const adminKey = readFileSync(existsSync(adminFile) ? adminFile : join(dirA, 'admin-key'), 'utf8').trim();
    const created = await waymarkAsync([
      'plane',
      'keys',
      'create',
      '--project',
      'local',
      '--scopes',
      'read',
      '--plane',
      a.url,
      '--key',
      adminKey,
    ]);
    expect(created.code, created.stderr).toBe(0);
    const key = keyOf(created.stdout);
    for (const p of [a, b]) expect((await call(`${p.url}/v1/executions`, { key })).status).toBe(200);
    const revoked = await waymarkAsync(['plane', 'keys', 'revoke', idOf(key), '--plane', a.url, '--key', adminKey]);
    expect(revoked.stdout.trim(), revoked.stderr).toMatch(new RegExp(`^revoked ${idOf(key)} through `));
    // by both processes: every request sent to either 1 s or more after the revoke command returned is refused
    const since = performance.now();
    await Promise.all(
      [a, b].map((p) => refusedWithin(async () => (await call(`${p.url}/v1/executions`, { key })).status, since, 1000)),
    );
    await Promise.all([a.stop(), b.stop()]);
  });
});
