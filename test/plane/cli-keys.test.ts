import { afterAll, describe, expect, it } from 'vitest';
import { planeMain } from '../../plane/cli.js';
import { authenticate } from '../../plane/auth.js';
import { apiKeys } from '../../plane/db/schema.js';
import { eq } from 'drizzle-orm';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { loadConfig } from '../../plane/config.js';
import { bootstrap, startPlane } from '../../plane/server.js';
import { writeFileSync } from 'node:fs';
import { call } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';

const tmp = scratchDir('waymark-keys-');
afterAll(() => tmp.cleanup());

async function run(args: string[]) {
  const lines: string[] = [];
  const code = await planeMain(args, (l) => lines.push(l));
  return { code, text: lines.join('\n') };
}

const evil = 'evil\x1b[31mred\nline';
/** A character a terminal acts on rather than shows. */
const raw = /[\u0000-\u001f\u007f-\u009f]/;
async function lines(args: string[]) {
  const out: string[] = [];
  const code = await planeMain(args, (l) => out.push(l));
  return { code, out };
}

describe('waymark plane keys and first start', () => {
  it('regression: a first start that failed between the project and its key file left a plane nobody could administer', async () => {
    const database = await openPlaneDatabase({ dataDir: 'memory://' });
    try {
      // the key file cannot be written (its folder is a file): nothing of the bootstrap may stay behind
      const blocked = tmp.file('blocked');
      writeFileSync(blocked, 'not a folder');
      await expect(bootstrap(database, join(blocked, 'plane'))).rejects.toThrow();
      expect(await database.db.execute('SELECT count(*)::int AS n FROM projects')).toMatchObject({ rows: [{ n: 0 }] });
      // so the next start bootstraps again, and its key works
      const dir = tmp.file('retry-plane');
      const boot = await bootstrap(database, dir);
      expect(boot?.file).toBe(join(dir, 'admin-key'));
      expect(readFileSync(boot!.file!, 'utf8').trim()).toBe(boot!.key);
      expect(await authenticate(database.db, boot!.key)).toMatchObject({ scopes: ['admin', 'operator'] });
      expect(await bootstrap(database, dir)).toBeNull();
    } finally {
      await database.close();
    }
  });

  it('creates (shown once), lists and revokes keys; stores only a hash', async () => {
    const dir = tmp.file('plane-a');
    expect((await run(['projects', 'create', 'acme', '--data-dir', dir])).text).toMatch(
      /^project acme created \(prj_[0-9a-f]{16}\) through the data dir .* directly \(no plane holds it\)$/,
    );
    const created = await run([
      'keys',
      'create',
      '--project',
      'acme',
      '--scopes',
      'ingest,read',
      '--name',
      'laptop',
      '--data-dir',
      dir,
    ]);
    expect(created.code).toBe(0);
    const key = created.text.split('\n').pop()!;
    expect(key).toMatch(/^wm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    const id = key.slice(3, 19);
    expect((await run(['keys', 'create', '--project', 'acme', '--scopes', 'root', '--data-dir', dir])).code).toBe(2);
    // a manager's key that may answer pauses and nothing else
    const approver = await run([
      'keys',
      'create',
      '--project',
      'acme',
      '--scopes',
      'approve',
      '--name',
      'refund-manager',
      '--data-dir',
      dir,
    ]);
    expect(approver.code).toBe(0);
    const list = await run(['keys', 'list', '--data-dir', dir]);
    expect(list.text.split('\n')[0]).toMatch(/^ID\s+PROJECT\s+SCOPES\s+NAME\s+STATE$/);
    expect(list.text).toMatch(/acme\s+approve\s+refund-manager\s+active/);
    expect(list.text).toMatch(new RegExp(`${id}\\s+acme\\s+ingest,read\\s+laptop\\s+active`));
    expect(list.text).not.toContain(key.slice(20));
    const db = await openPlaneDatabase({ dataDir: dir });
    expect(await authenticate(db.db, key)).toMatchObject({ scopes: ['ingest', 'read'] });
    const dump = JSON.stringify(await db.db.query.apiKeys.findMany());
    expect(dump).not.toContain(key.slice(20));
    await db.close();
    expect((await run(['keys', 'revoke', id, '--data-dir', dir])).text).toMatch(new RegExp(`^revoked ${id} through `));
    const again = await run(['keys', 'revoke', id, '--data-dir', dir]);
    expect(again.code).toBe(1);
    expect(again.text).toMatch(/KEY_REVOKED/);
    // the revocation time as the rest of the CLI prints times: local wall-clock time with its offset
    expect((await run(['keys', 'list', '--data-dir', dir])).text).toMatch(
      new RegExp(
        `${id}\\s+acme\\s+ingest,read\\s+laptop\\s+revoked \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d\\d:\\d\\d$`,
        'm',
      ),
    );
    const db2 = await openPlaneDatabase({ dataDir: dir });
    expect(await authenticate(db2.db, key)).toBeNull();
    await db2.close();
  });

  it('terminal injection defect: a key name with control characters or over 128 characters is refused naming every problem (USAGE, before the database is opened) and changes nothing', async () => {
    const dir = tmp.file('plane-names');
    expect((await run(['projects', 'create', 'acme', '--data-dir', dir])).code).toBe(0);
    const fresh = tmp.file('plane-names-never-made');
    for (const d of [dir, fresh]) {
      const bad = await lines([
        'keys',
        'create',
        '--project',
        'acme',
        '--scopes',
        'read',
        '--name',
        `${evil}${'x'.repeat(130)}`,
        '--data-dir',
        d,
      ]);
      expect(bad.code).toBe(2);
      expect(bad.out).toHaveLength(1);
      // one refusal of several lines (the problems, then the usage), none with a character a terminal acts on
      for (const l of bad.out[0].split('\n')) expect(l).not.toMatch(raw);
      expect(bad.out[0]).toMatch(/^waymark plane keys create: USAGE: 2 problems:\n/);
      expect(bad.out[0]).toContain("  - option '--name': is 147 characters long, more than 128\n");
      expect(bad.out[0]).toContain('  - option \'--name\': holds characters a terminal acts on ("\\u001b", "\\u000a")');
    }
    // nothing changed: no key, and no database made in a named data dir that was not there
    expect((await run(['keys', 'list', '--data-dir', dir])).text).toBe('no keys');
    expect(existsSync(fresh)).toBe(false);
    // names that are not refused: 128 characters, another script, emoji
    for (const name of ['x'.repeat(128), 'ノートパソコン', 'deploy 🚀 bot']) {
      expect(
        (await run(['keys', 'create', '--project', 'acme', '--scopes', 'read', '--name', name, '--data-dir', dir]))
          .code,
        name,
      ).toBe(0);
    }
    expect((await lines(['keys', 'list', '--data-dir', dir])).out).toHaveLength(4);
  });

  it('terminal injection defect: keys list prints a name stored before names were checked with its control characters escaped, never raw', async () => {
    const dir = tmp.file('plane-stored-names');
    expect((await run(['projects', 'create', 'acme', '--data-dir', dir])).code).toBe(0);
    for (const name of ['laptop', 'ci'])
      expect(
        (await run(['keys', 'create', '--project', 'acme', '--scopes', 'read', '--name', name, '--data-dir', dir]))
          .code,
      ).toBe(0);
    const db = await openPlaneDatabase({ dataDir: dir });
    await db.db.update(apiKeys).set({ name: evil }).where(eq(apiKeys.name, 'laptop'));
    await db.close();
    const list = await lines(['keys', 'list', '--data-dir', dir]);
    expect(list.code).toBe(0);
    expect(list.out).toHaveLength(3);
    for (const l of list.out) expect(l).not.toMatch(raw);
    expect(list.out.join('\n')).toMatch(/acme\s+read\s+evil\\u001b\[31mred\\u000aline\s+active/);
  });

  it('regression: keys commands run from another directory than the plane made an empty database there and answered from it', async () => {
    const cwd = process.cwd();
    const elsewhere = tmp.file('elsewhere');
    (await import('node:fs')).mkdirSync(elsewhere, { recursive: true });
    process.chdir(elsewhere);
    const saved = process.env.WAYMARK_PLANE_DIR;
    delete process.env.WAYMARK_PLANE_DIR;
    try {
      for (const args of [
        ['keys', 'list'],
        ['keys', 'create', '--project', 'local', '--scopes', 'ingest,read'],
        ['projects', 'list'],
      ]) {
        const lines: string[] = [];
        const code = await planeMain(args, (l) => lines.push(l));
        expect(code, args.join(' ')).toBe(1);
        expect(lines.join('\n')).toContain(
          `NO_PLANE_DATA: no plane data dir at ${join(elsewhere, '.waymark', 'plane')}`,
        );
      }
      expect(existsSync(join(elsewhere, '.waymark'))).toBe(false);
    } finally {
      process.chdir(cwd);
      if (saved !== undefined) process.env.WAYMARK_PLANE_DIR = saved;
    }
  });

  it('typo tenant defect: a key for an unknown project is UNKNOWN_PROJECT listing the known ones, and creates nothing', async () => {
    const dir = tmp.file('plane-typo');
    expect((await run(['projects', 'create', 'acme', '--data-dir', dir])).code).toBe(0);
    expect((await run(['projects', 'create', 'zeta', '--data-dir', dir])).code).toBe(0);
    const typo = await run(['keys', 'create', '--project', 'acmee', '--scopes', 'ingest', '--data-dir', dir]);
    expect(typo.code).toBe(1);
    expect(typo.text).toMatch(
      /UNKNOWN_PROJECT: no project 'acmee'; known: acme, zeta; create it with 'waymark plane projects create acmee'/,
    );
    expect((await run(['projects', 'list', '--data-dir', dir])).text.split('\n').map((l) => l.split(/\s+/)[1])).toEqual(
      ['acme', 'zeta'],
    );
    expect((await run(['keys', 'list', '--data-dir', dir])).text).toBe('no keys');
    const dup = await run(['projects', 'create', 'acme', '--data-dir', dir]);
    expect(dup.code).toBe(1);
    expect(dup.text).toMatch(/PROJECT_EXISTS/);
    const bad = await run(['projects', 'create', 'no spaces/here', '--data-dir', dir]);
    expect(bad.code).toBe(1);
    expect(bad.text).toMatch(/INVALID_REQUEST: project name 'no spaces\/here' must be/);
  });

  it('on first start writes one admin key to a 0600 file; dev mode skips login only on loopback', async () => {
    const dir = tmp.file('plane-b');
    const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: dir, dev: true }), {
      logger: pino({ level: 'silent' }),
    });
    try {
      expect(plane.adminKeyFile).toBe(join(dir, 'admin-key'));
      expect(statSync(plane.adminKeyFile!).mode & 0o777).toBe(0o600);
      const key = readFileSync(plane.adminKeyFile!, 'utf8').trim();
      expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
      const page = await fetch(`${plane.url}/`, { redirect: 'manual' });
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<h1>Runs<\/h1>/);
    } finally {
      await plane.close();
    }
    const again = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: dir }), {
      logger: pino({ level: 'silent' }),
    });
    expect(again.adminKeyFile).toBeNull();
    expect((await fetch(`${again.url}/`, { redirect: 'manual' })).status).toBe(303);
    await again.close();
    // a stable code, and the hosts it takes named (::1 and localhost are loopback too)
    await expect(
      startPlane(loadConfig({}, { host: '0.0.0.0', port: 0, dataDir: dir, dev: true }), {
        logger: pino({ level: 'silent' }),
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringContaining("only allowed on a loopback host (127.0.0.1, ::1 or localhost), not '0.0.0.0'"),
    });
  });

  it('an in-memory plane returns its admin key and writes no file (it once wrote ./memory:/admin-key)', async () => {
    const stray = join(process.cwd(), 'memory:');
    rmSync(stray, { recursive: true, force: true });
    const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), {
      logger: pino({ level: 'silent' }),
    });
    try {
      expect(plane.adminKeyFile).toBeNull();
      expect(plane.adminKey).toMatch(/^wm_/);
      expect((await call(`${plane.url}/v1/executions`, { key: plane.adminKey! })).status).toBe(200);
      expect(existsSync(stray)).toBe(false);
    } finally {
      await plane.close();
    }
  });
});
