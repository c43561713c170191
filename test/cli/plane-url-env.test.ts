/**
 * docs/GUIDE.md exports WAYMARK_PLANE_URL and WAYMARK_API_KEY once; every
 * `waymark` command that talks to a plane (`sync now`, `restore`) then finds
 * both without `--plane` and `--key`. Run through the real binary with the
 * variables in its environment, against a real plane.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { waymarkAsync } from '../helpers/plane-process.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-cli-plane-env-');
let plane: TestPlane;
let env: Record<string, string>;
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  env = { WAYMARK_PLANE_URL: plane.url, WAYMARK_API_KEY: await plane.key('env', ['ingest', 'read']) };
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

describe('the CLI takes the plane from WAYMARK_PLANE_URL, as it takes the key from WAYMARK_API_KEY', () => {
  it('sync now and restore reach the plane named by WAYMARK_PLANE_URL, with no --plane or --key; --plane still wins over it', async () => {
    const db = tmp.file('first.db');
    const store = new SqliteCheckpointer({ path: db });
    for (let i = 0; i < 3; i++) await store.put(step('env-run', i));
    await store.recordInterrupt(pause('env-run', 3), { reason: 'approval', context: {} });
    await store.close();

    const sync = await waymarkAsync(['sync', 'now', '--db', db], { env });
    expect(sync.code, `${sync.stdout}${sync.stderr}`).toBe(0);
    expect(sync.stdout).toContain(`plane ${plane.url}: reachable`);
    expect(sync.stdout).toMatch(/synced 5 rows; 0 waiting; 0 quarantined/);

    // the GUIDE's line: a machine that never ran the run
    const restore = await waymarkAsync(['restore', 'env-run', '--db', tmp.file('third.db')], { env });
    expect(restore.code, `${restore.stdout}${restore.stderr}`).toBe(0);
    expect(restore.stdout).toMatch(/restored env-run: 4 rows written, 0 already here; pause restored/);

    // --plane still wins over the variable
    const flag = await waymarkAsync(['restore', 'env-run', '--db', tmp.file('fourth.db'), '--plane', plane.url], {
      env: { ...env, WAYMARK_PLANE_URL: 'http://127.0.0.1:9/nowhere' },
    });
    expect(flag.code, `${flag.stdout}${flag.stderr}`).toBe(0);
    expect(flag.stdout).toMatch(/restored env-run: 4 rows written/);
  });

  it('a restore the plane refuses (a wrong key) or cannot answer leaves no store file it made; an existing store is kept', async () => {
    const made = tmp.file('refused-new.db');
    const refused = await waymarkAsync(['restore', 'env-run', '--db', made], {
      env: { ...env, WAYMARK_API_KEY: 'wm_not_a_key' },
    });
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('UNAUTHORIZED')]);
    expect(['', '-wal', '-shm'].map((s) => existsSync(`${made}${s}`))).toEqual([false, false, false]);
    const down = await waymarkAsync(['restore', 'env-run', '--db', made, '--plane', 'http://127.0.0.1:9'], { env });
    expect(down.code).toBe(1);
    expect(existsSync(made)).toBe(false);
    // a store that was there before the failed restore stays, its rows untouched
    const kept = tmp.file('kept.db');
    const store = new SqliteCheckpointer({ path: kept });
    await store.put(step('mine', 0));
    await store.close();
    const again = await waymarkAsync(['restore', 'env-run', '--db', kept], {
      env: { ...env, WAYMARK_API_KEY: 'wm_not_a_key' },
    });
    expect(again.code).toBe(1);
    const reopened = new SqliteCheckpointer({ path: kept });
    expect((await reopened.list('mine')).length).toBe(1);
    await reopened.close();
  });

  it('with neither --plane nor WAYMARK_PLANE_URL (nor a key), the command names both ways to give each, exit 2; --help says where the defaults come from', async () => {
    const r = await waymarkAsync(['restore', 'env-run', '--db', tmp.file('never.db')], {
      env: { WAYMARK_PLANE_URL: '', WAYMARK_API_KEY: '' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a plane is required: --plane or WAYMARK_PLANE_URL');
    expect(r.stderr).toContain('a key is required: --key or WAYMARK_API_KEY');
    for (const command of [['restore'], ['sync', 'now']]) {
      const help = await waymarkAsync([...command, '--help']);
      expect(help.stdout).toMatch(/--plane PLANE\s+the plane URL, .*\(default: \$WAYMARK_PLANE_URL/);
      expect(help.stdout).toMatch(/--key KEY\s+an API key of the plane \(default: \$WAYMARK_API_KEY/);
    }
  });
});
