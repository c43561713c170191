/**
 * `waymark plane keys create` with several mistakes names every one of them
 * at once and creates nothing: what the CLI can check itself (the scopes, the
 * key name) as USAGE before it asks anyone; what only the plane knows (the
 * project) in the plane's answer, which names every problem of the request
 * too. A real plane process on a temp data dir, the real binary against it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/plane.js';
import { startPlaneProcess, waymarkAsync, type PlaneProcess } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-keys-create-problems-');
const dir = tmp.file('plane');
let plane: PlaneProcess;
let admin = '';
beforeAll(async () => {
  plane = await startPlaneProcess(['--data-dir', dir]);
  admin = readFileSync(join(dir, 'admin-key'), 'utf8').trim();
});
afterAll(async () => {
  await plane?.stop();
  tmp.cleanup();
});

const keysCreate = (...args: string[]) =>
  waymarkAsync(['plane', 'keys', 'create', ...args, '--data-dir', dir], {
    env: { WAYMARK_PLANE_URL: '', WAYMARK_API_KEY: '' },
  });
const keyList = async () =>
  (await call(`${plane.url}/v1/admin/keys`, { key: admin })).body.items as { id: string; name: string }[];

describe('plane keys create names every problem at once and creates nothing', () => {
  it('an unknown scope and a name with a control character are both named (USAGE, exit 2), before the plane is asked', async () => {
    const before = await keyList();
    const r = await keysCreate('--project', 'nope', '--scopes', 'bogus', '--name', 'a\tb');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^waymark plane keys create: USAGE: 2 problems:\n/);
    expect(r.stderr).toContain(
      "  - option '--scopes': unknown scope(s): bogus (known: ingest, read, approve, cancel, operate, admin, operator)",
    );
    expect(r.stderr).toContain('  - option \'--name\': holds characters a terminal acts on ("\\u0009")');
    expect(r.stderr).not.toContain('\t');
    // over 128 characters and a control character: both named, with the scope
    const long = await keysCreate('--project', 'nope', '--scopes', 'read,root', '--name', `\x1b${'x'.repeat(130)}`);
    expect(long.code, long.stderr).toBe(2);
    expect(long.stderr).toMatch(/^waymark plane keys create: USAGE: 3 problems:\n/);
    for (const p of [
      "option '--scopes': unknown scope(s): root",
      "option '--name': is 131 characters long, more than 128",
      'option \'--name\': holds characters a terminal acts on ("\\u001b")',
    ])
      expect(long.stderr).toContain(p);
    expect(await keyList()).toEqual(before);
  });

  it('an unknown project, which only the plane knows, is its answer: UNKNOWN_PROJECT listing the known ones; nothing created', async () => {
    const before = await keyList();
    const r = await keysCreate('--project', 'nope', '--scopes', 'read', '--name', 'laptop');
    expect([r.code, r.stderr.trim()]).toEqual([
      1,
      "waymark: UNKNOWN_PROJECT: no project 'nope'; known: local; create it with 'waymark plane projects create nope'",
    ]);
    expect(await keyList()).toEqual(before);
  });

  it("the plane's answer to a request with several problems is INVALID_REQUEST naming each (the unknown project too); nothing created", async () => {
    const before = await keyList();
    const r = await call(`${plane.url}/v1/admin/keys`, {
      key: admin,
      json: { project: 'nope', name: `a\tb${'x'.repeat(130)}`, scopes: ['read'] },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: {
        problems: [
          'name: is 133 characters long, more than 128',
          'name: holds characters a terminal acts on ("\\u0009")',
          "project: no project 'nope'; known: local; create it with 'waymark plane projects create nope'",
        ],
        project: 'nope',
        known: ['local'],
      },
    });
    expect(r.body.error.message).toBe(
      "the key was not created: name: is 133 characters long, more than 128; name: holds characters a terminal acts on (\"\\u0009\"); project: no project 'nope'; known: local; create it with 'waymark plane projects create nope'",
    );
    expect(await keyList()).toEqual(before);
  });
});
