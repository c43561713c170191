/**
 * A command line the CLI cannot parse is refused like every other error:
 * `waymark…: USAGE: …` (the stable code after the command, so a script
 * matches it without parsing the sentence), every problem named, exit 2, and
 * nothing opened or created. Run through the real binary.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { waymarkAsync } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-cli-usage-');
afterAll(() => tmp.cleanup());

/** No plane URL or key from the caller's environment: the refusals below must not depend on it. */
const env = { WAYMARK_PLANE_URL: '', WAYMARK_API_KEY: '' };

describe('usage errors print their stable code, USAGE, and exit 2', () => {
  it('an unknown command or subcommand (client and plane) is `waymark: USAGE: …` with the suggestion', async () => {
    const cases: [string[], string][] = [
      [['frobnicate'], "waymark: USAGE: unknown command 'frobnicate'"],
      [['runz'], "waymark: USAGE: unknown command 'runz' (did you mean 'runs'?)"],
      [['sync', 'nwo'], "waymark: USAGE: unknown subcommand 'sync nwo' (did you mean 'sync now'?); known: status, now"],
      [['sync'], "waymark: USAGE: 'sync' needs a subcommand: status or now"],
      [
        ['plane', 'key', 'list'],
        "waymark: USAGE: unknown command 'plane key' (did you mean 'plane keys'?); known: projects, keys, prune",
      ],
      [
        ['plane', 'keys', 'lsit'],
        "waymark: USAGE: unknown subcommand 'plane keys lsit' (did you mean 'plane keys list'?); known: create, list, revoke",
      ],
      [['plane', 'keys'], "waymark: USAGE: 'plane keys' needs a subcommand: create or list or revoke"],
    ];
    for (const [args, first] of cases) {
      const r = await waymarkAsync(args, { env });
      expect([r.code, r.stderr.split('\n')[0]], args.join(' ')).toEqual([2, first]);
      expect(r.stdout, args.join(' ')).toBe('');
    }
  });

  it('bad options of a command are `waymark COMMAND: USAGE: N problems:` with each problem, then the usage', async () => {
    const dir = tmp.file('never-made-plane');
    const keys = await waymarkAsync(['plane', 'keys', 'create', '--data-dir', dir], { env });
    expect(keys.code).toBe(2);
    expect(keys.stderr).toMatch(
      /^waymark plane keys create: USAGE: 2 problems:\n {2}- option --project is required\n {2}- option --scopes is required\n\nusage: waymark plane keys create \[options\]\n/,
    );
    expect(existsSync(dir)).toBe(false);

    const db = tmp.file('never-made.db');
    const runs = await waymarkAsync(['runs', '--db', db, '--limit', '0'], { env });
    expect([runs.code, runs.stderr.split('\n')[0]]).toEqual([
      2,
      `waymark runs: USAGE: option '--limit': must be an integer, at least 1 (got "0")`,
    ]);
    expect(runs.stderr).toContain('\n\nusage: waymark runs [options]\n');
    expect(existsSync(db)).toBe(false);

    const port = await waymarkAsync(['plane', '--data-dir', dir, '--port', 'x', 'stray'], { env });
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(
      /^waymark plane: USAGE: 2 problems:\n {2}- unexpected argument 'stray'\n {2}- option '--port': must be an integer, from 0 to 65535 \(got "x"\)\n/,
    );
    expect(existsSync(dir)).toBe(false);
  });

  it("a plane URL that is not one (a host and port without http://, another scheme) is the option's USAGE problem, with the URL meant; nothing is created", async () => {
    const db = tmp.file('restore-here.db');
    const restore = await waymarkAsync(['restore', 'run-1', '--db', db, '--plane', '127.0.0.1:4600', '--key', 'k'], {
      env,
    });
    expect([restore.code, restore.stderr.split('\n')[0]]).toEqual([
      2,
      "waymark restore: USAGE: option '--plane': must be the plane's http or https URL (got a string that is not a URL) (did you mean 'http://127.0.0.1:4600'?)",
    ]);
    // a restore creates its store: not for a command line it refuses
    expect(existsSync(db)).toBe(false);
    const sync = await waymarkAsync(['sync', 'now', '--db', db, '--key', 'k'], {
      env: { ...env, WAYMARK_PLANE_URL: 'ftp://plane.example' },
    });
    expect([sync.code, sync.stderr.split('\n')[0]]).toEqual([
      2,
      "waymark sync now: USAGE: WAYMARK_PLANE_URL: must be the plane's http or https URL (got a 'ftp:' URL)",
    ]);
    // a command that never asks a plane is not refused for a bad WAYMARK_PLANE_URL
    const local = await waymarkAsync(['runs', '--db', db], { env: { ...env, WAYMARK_PLANE_URL: 'localhost:4600' } });
    expect([local.code, local.stderr]).toEqual([1, expect.stringContaining('STORE_NOT_FOUND')]);
    const keys = await waymarkAsync(['plane', 'keys', 'list', '--plane', 'localhost:4600', '--key', 'k'], { env });
    expect([keys.code, keys.stderr.split('\n')[0]]).toEqual([
      2,
      "waymark plane keys list: USAGE: option '--plane': must be the plane's http or https URL (got a 'localhost:' URL) (did you mean 'http://localhost:4600'?)",
    ]);
  });

  it('a database URL that is not a Postgres one (flag or variable) is refused naming it, its value not shown; nothing is started', async () => {
    const flag = await waymarkAsync(['plane', '--database-url', 'mysql://root:secret@db/x', '--port', '0'], { env });
    expect([flag.code, flag.stderr.split('\n')[0]]).toEqual([
      2,
      "waymark plane: USAGE: option '--database-url' must be a postgres:// or postgresql:// URL such as postgres://user:password@host:5432/db (the value is not shown: it may hold a password)",
    ]);
    const variable = await waymarkAsync(['plane', '--port', '0'], {
      env: { ...env, WAYMARK_DATABASE_URL: 'mysql://root:secret@db/x' },
    });
    expect([variable.code, variable.stderr.trim()]).toEqual([
      1,
      expect.stringMatching(
        /^waymark: INVALID_OPTIONS: invalid plane configuration: WAYMARK_DATABASE_URL: must be a postgres:\/\/ /,
      ),
    ]);
    for (const r of [flag, variable]) expect(r.stderr).not.toContain('secret');
  });

  it('no command at all is a usage error too: the code, then the command list', async () => {
    const r = await waymarkAsync([], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^waymark: USAGE: no command given\n\nwaymark \S+: durable, portable agent runs\n/);
  });
});
