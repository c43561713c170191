/**
 * A plane's data dir and its first-start admin key, followed as a newcomer
 * does from docs/OPERATIONS.md: a data dir belongs to one database (its admin-key
 * file is never overwritten), a start that fails bootstraps nothing, and the
 * keys commands reach a running Postgres plane through its data dir as they
 * do a PGlite one. Real `bin/waymark.mjs` processes on 127.0.0.1, port 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import postgres from 'postgres';
import { call } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { startPlaneProcess, waymarkAsync, type PlaneProcess } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-bootstrap-dir-');
const running: PlaneProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.kill()));
  tmp.cleanup();
});

/** Start a plane that should be refused; one that serves anyway is stopped by afterAll, and the test fails. */
async function refusedStart(args: string[], o: { cwd?: string; env?: Record<string, string> }): Promise<string> {
  const r = await startPlaneProcess(args, o).then(
    (p) => {
      running.push(p);
      return p;
    },
    (e: Error) => e,
  );
  expect(r, 'the plane started').toBeInstanceOf(Error);
  return (r as Error).message;
}

/** The projects in a plane database; none when it was never migrated (a plane refused before it opened it). */
async function projectsIn(url: string): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [{ t }] = await sql<{ t: string | null }[]>`SELECT to_regclass('projects')::text AS t`;
    if (t === null) return [];
    return (await sql<{ name: string }[]>`SELECT name FROM projects ORDER BY name`).map((r) => r.name);
  } finally {
    await sql.end({ timeout: 2 });
  }
}

async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, server };
}

describe('a failed start bootstraps nothing (PGlite)', () => {
  it('first start defect: a start refused with PORT_IN_USE writes no admin key; the start that serves is the first start and says where the key is', async () => {
    const { port, server } = await takenPort();
    const dir = tmp.file('pd2');
    try {
      const r = await waymarkAsync(['plane', '--port', String(port)], {
        env: { WAYMARK_PLANE_DIR: dir, WAYMARK_LOG_LEVEL: 'silent' },
      });
      expect([r.code, r.stderr]).toEqual([1, expect.stringContaining('waymark: PORT_IN_USE: ')]);
      expect(existsSync(join(dir, 'admin-key'))).toBe(false);
    } finally {
      server.close();
    }
    const plane = await startPlaneProcess([], { env: { WAYMARK_PLANE_DIR: dir } });
    running.push(plane);
    expect(plane.stdout()).toContain(
      `first start: created project 'local' and an admin key, written to ${join(dir, 'admin-key')} (mode 0600)`,
    );
    const key = readFileSync(join(dir, 'admin-key'), 'utf8').trim();
    expect((await call(`${plane.url}/v1/admin/projects`, { key })).status).toBe(200);
    await plane.stop();
  });

  it('half-set-up data dir defect: a start refused with PORT_IN_USE removes the data dir it made (and the folders made for it), never a folder that held something; keys commands there say NO_PLANE_DATA', async () => {
    const cwd = tmp.file('port-cwd');
    const empty = join(cwd, 'empty');
    const kept = join(cwd, 'kept');
    mkdirSync(empty, { recursive: true });
    mkdirSync(kept);
    writeFileSync(join(kept, 'notes.txt'), 'mine');
    const { port, server } = await takenPort();
    try {
      // the GUIDE's `npx waymark plane` in another directory while `npm start` serves the port; then named data dirs
      const starts = [
        [],
        ['--data-dir', join(cwd, 'made', 'for', 'plane')],
        ['--data-dir', empty],
        ['--data-dir', kept],
      ];
      const refused = await Promise.all(
        starts.map((args) =>
          waymarkAsync(['plane', '--port', String(port), ...args], { cwd, env: { WAYMARK_LOG_LEVEL: 'silent' } }),
        ),
      );
      for (const [i, r] of refused.entries())
        expect([r.code, r.stderr], starts[i].join(' ')).toEqual([1, expect.stringContaining('waymark: PORT_IN_USE: ')]);
    } finally {
      server.close();
    }
    expect(readdirSync(cwd).sort()).toEqual(['empty', 'kept']);
    expect(readdirSync(empty)).toEqual([]);
    expect(readFileSync(join(kept, 'notes.txt'), 'utf8')).toBe('mine');
    const keys = await waymarkAsync(['plane', 'keys', 'create', '--project', 'local', '--scopes', 'ingest,read'], {
      cwd,
    });
    expect([keys.code, keys.stderr]).toEqual([
      1,
      expect.stringContaining(`waymark: NO_PLANE_DATA: no plane data dir at ${join(cwd, '.waymark', 'plane')}`),
    ]);
    expect(existsSync(join(cwd, '.waymark'))).toBe(false);
    // and the next start there is the first start, not 'admin key: none … set up by a plane with another data dir'
    const plane = await startPlaneProcess([], { cwd });
    running.push(plane);
    expect(plane.stdout()).toContain(
      `first start: created project 'local' and an admin key, written to ${join(cwd, '.waymark', 'plane', 'admin-key')} (mode 0600)`,
    );
    await plane.stop();
    // a SIGTERM is said, and so is the end of the stop (the data dir's lock is gone then)
    expect(plane.stdout()).toMatch(/stopping: finishing the requests in hand, then closing the database\nstopped\n$/);
  }, 480_000);
});

describe('a PGlite database set up before its first start', () => {
  it('admin key message defect: a PGlite plane on a database that projects commands set up says it has no admin key and how to make one, not that a plane with another data dir has it', async () => {
    const dir = tmp.file('projects-first');
    const project = await waymarkAsync(['plane', 'projects', 'create', 'acme', '--data-dir', dir]);
    expect(project.code, project.stderr).toBe(0);
    const plane = await startPlaneProcess(['--data-dir', dir]);
    running.push(plane);
    expect(plane.stdout()).toContain(
      `admin key: none at ${join(dir, 'admin-key')}: this database was set up without one`,
    );
    expect(plane.stdout()).not.toContain('another data dir');
    await plane.stop();
    // the way out it names
    const made = await waymarkAsync([
      'plane',
      'keys',
      'create',
      '--project',
      'acme',
      '--scopes',
      'admin,operator',
      '--data-dir',
      dir,
    ]);
    expect(made.code, made.stderr).toBe(0);
  });
});

/** What in a folder others may read, write or enter (group or other permission bits), as `mode path`. */
function openToOthers(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => ({ name, mode: statSync(join(dir, name)).mode & 0o777 }))
    .filter((f) => f.mode & 0o077)
    .map((f) => `${f.mode.toString(8)} ${f.name}`);
}

describe('a PGlite data dir is private to its owner', () => {
  it('data dir mode defect: a start makes its data dir 0700 (a new one, and an existing 0755 one on every start); a stopped plane leaves no file in it open to others', async () => {
    const made = tmp.file('private-new/plane');
    const loose = tmp.file('private-loose');
    mkdirSync(loose);
    chmodSync(loose, 0o755);
    for (const dir of [made, loose]) {
      const plane = await startPlaneProcess(['--data-dir', dir]);
      running.push(plane);
      // while it serves: no other user may enter the folder, whatever the modes PGlite gives its files
      expect((statSync(dir).mode & 0o777).toString(8), dir).toBe('700');
      expect((statSync(join(dir, 'plane.lock')).mode & 0o777).toString(8)).toBe('600');
      expect((statSync(join(dir, 'admin-key')).mode & 0o777).toString(8)).toBe('600');
      await plane.stop();
      expect(openToOthers(dir), dir).toEqual([]);
    }
    // a data dir made 0755 again (a restored backup, a chmod -R) is made private on the next start
    chmodSync(loose, 0o755);
    const again = await startPlaneProcess(['--data-dir', loose]);
    running.push(again);
    expect((statSync(loose).mode & 0o777).toString(8)).toBe('700');
    await again.stop();
  }, 480_000);
});

const pg = await pgReady('plane data dir and admin key on postgres');

describe.skipIf(!pg)('a data dir belongs to one database (PGlite and Postgres)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_bootstrap_dir');
  });
  afterAll(async () => db?.drop());

  it("admin key overwrite defect: a Postgres plane never takes a running PGlite plane's data dir, nor overwrites another database's admin-key file", async () => {
    const cwd = tmp.file('shared-cwd');
    mkdirSync(cwd, { recursive: true });
    const dir = join(cwd, '.waymark', 'plane');
    const file = join(dir, 'admin-key');
    const lite = await startPlaneProcess([], { cwd, env: { WAYMARK_PORT: '0' } });
    running.push(lite);
    const liteKey = readFileSync(file, 'utf8').trim();

    // the finding: `WAYMARK_DATABASE_URL=… npx waymark plane --port 0` in the same directory
    const pgEnv = { WAYMARK_DATABASE_URL: db.url };
    const locked = await refusedStart([], { cwd, env: pgEnv });
    expect(locked).toContain(
      `DATA_DIR_LOCKED: the plane data dir ${dir} is in use by process ${lite.child.pid} (a plane serving ${lite.url}`,
    );
    expect(locked).toContain('a second plane needs a data dir of its own (--data-dir DIR or WAYMARK_PLANE_DIR)');
    expect(readFileSync(file, 'utf8').trim()).toBe(liteKey);
    expect(await projectsIn(db.url)).toEqual([]);
    const list = await waymarkAsync(['plane', 'keys', 'list'], { cwd });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/local\s+admin,operator\s+bootstrap admin\s+active/);
    await lite.stop();

    // the PGlite plane stopped: its key file is still not this empty database's to replace
    const foreign = await refusedStart([], { cwd, env: pgEnv });
    expect(foreign).toContain(
      `INVALID_OPTIONS: the data dir ${dir} has an admin key of another plane database (${file})`,
    );
    expect(foreign).toContain('Give this plane a data dir of its own (--data-dir DIR or WAYMARK_PLANE_DIR)');
    expect(readFileSync(file, 'utf8').trim()).toBe(liteKey);
    expect(await projectsIn(db.url)).toEqual([]);
    expect(existsSync(join(dir, 'plane.lock'))).toBe(false);

    // with a data dir of its own it starts (first start); in the PGlite dir it is refused still: that key is not its database's
    const own = await startPlaneProcess(['--data-dir', 'pg-dir'], { cwd, env: pgEnv });
    running.push(own);
    expect(own.stdout()).toContain(
      `first start: created project 'local' and an admin key, written to ${join(cwd, 'pg-dir', 'admin-key')}`,
    );
    const second = await refusedStart([], { cwd, env: pgEnv });
    expect(second).toContain(
      `INVALID_OPTIONS: the data dir ${dir} has an admin key of another plane database (${file}), whose key the Postgres database '${db.name}'`,
    );
    // a second Postgres plane on that database with a data dir of its own (or none) serves
    const none = await startPlaneProcess(['--data-dir', 'memory://'], { cwd, env: pgEnv });
    running.push(none);
    await Promise.all([own.stop(), none.stop()]);

    // and the PGlite plane, started again, has its key
    const again = await startPlaneProcess([], { cwd, env: { WAYMARK_PORT: '0' } });
    running.push(again);
    expect(again.stdout()).toContain(`admin key: ${file}`);
    expect((await call(`${again.url}/v1/admin/keys`, { key: liteKey })).status).toBe(200);
    await again.stop();
  }, 480_000);

  it('a Postgres plane whose data dir cannot be written (a read-only filesystem, here a path under a file) says so and names memory://; it starts with memory://', async () => {
    const file = tmp.file('not-a-dir');
    writeFileSync(file, 'x');
    const r = await waymarkAsync(['plane', '--port', '0', '--data-dir', join(file, 'plane')], {
      env: { WAYMARK_DATABASE_URL: db.url, WAYMARK_LOG_LEVEL: 'silent' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `waymark: INVALID_OPTIONS: the plane data dir ${join(file, 'plane')} cannot be written (ENOTDIR)`,
    );
    expect(r.stderr).toContain('or memory:// for none');
    const none = await startPlaneProcess(['--data-dir', 'memory://'], { env: { WAYMARK_DATABASE_URL: db.url } });
    running.push(none);
    await none.stop();
  });

  it('Postgres first start defect: a start refused with PORT_IN_USE bootstraps nothing and leaves no data dir; the next start is the first start', async () => {
    const fresh = await createTestDatabase('waymark_bootstrap_port');
    try {
      const { port, server } = await takenPort();
      const dir = tmp.file('pd3');
      try {
        const r = await waymarkAsync(['plane', '--port', String(port), '--data-dir', dir], {
          env: { WAYMARK_DATABASE_URL: fresh.url, WAYMARK_LOG_LEVEL: 'silent' },
        });
        expect([r.code, r.stderr]).toEqual([1, expect.stringContaining('waymark: PORT_IN_USE: ')]);
      } finally {
        server.close();
      }
      expect(existsSync(dir)).toBe(false);
      expect(await projectsIn(fresh.url)).toEqual([]);
      const plane = await startPlaneProcess(['--data-dir', dir], { env: { WAYMARK_DATABASE_URL: fresh.url } });
      running.push(plane);
      expect(plane.stdout()).toContain(
        `first start: created project 'local' and an admin key, written to ${join(dir, 'admin-key')} (mode 0600)`,
      );
      await plane.stop();
    } finally {
      await fresh.drop();
    }
  });

  it('keys commands next to a Postgres plane defect: they go through the running plane found in its data dir; with none running, NO_PLANE_DATA says what to pass and creates nothing', async () => {
    const fresh = await createTestDatabase('waymark_bootstrap_keys');
    try {
      const cwd = tmp.file('pg-keys-cwd');
      mkdirSync(cwd, { recursive: true });
      const dir = join(cwd, '.waymark', 'plane');
      // the Postgres URL is the plane's environment only: the key commands are typed in another terminal
      const plane = await startPlaneProcess([], { cwd, env: { WAYMARK_DATABASE_URL: fresh.url, WAYMARK_PORT: '0' } });
      running.push(plane);
      const created = await waymarkAsync(['plane', 'keys', 'create', '--project', 'local', '--scopes', 'ingest,read'], {
        cwd,
      });
      expect(created.code, created.stderr).toBe(0);
      const key = created.stdout.trim().split('\n').pop()!;
      expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
      const list = await waymarkAsync(['plane', 'keys', 'list'], { cwd });
      expect(list.stdout).toMatch(new RegExp(`${key.slice(3, 19)}\\s+local\\s+ingest,read`));
      expect(plane.stdout()).toContain(`(database: postgres, data dir ${dir})`);
      await plane.stop();

      for (const env of [{}, { WAYMARK_PLANE_DIR: dir }] as Record<string, string>[]) {
        const r = await waymarkAsync(['plane', 'keys', 'list'], { cwd, env });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(
          `NO_PLANE_DATA: no plane is running on the data dir ${dir}, and it holds no PGlite database`,
        );
        expect(r.stderr).toContain('--database-url URL (or WAYMARK_DATABASE_URL)');
        expect(r.stderr).not.toContain('no plane data dir at');
        expect(existsSync(join(dir, 'PG_VERSION'))).toBe(false);
      }
      const direct = await waymarkAsync(['plane', 'keys', 'list', '--database-url', fresh.url], { cwd });
      expect(direct.code, direct.stderr).toBe(0);
      expect(direct.stdout).toMatch(new RegExp(`${key.slice(3, 19)}\\s+local\\s+ingest,read`));
      // nor does a PGlite plane make a database in a Postgres plane's data dir
      const lite = await refusedStart([], { cwd, env: { WAYMARK_PORT: '0' } });
      expect(lite).toContain(`INVALID_OPTIONS: the data dir ${dir} has an admin key of another plane database`);
      expect(existsSync(join(dir, 'PG_VERSION'))).toBe(false);
    } finally {
      await fresh.drop();
    }
  });
});
