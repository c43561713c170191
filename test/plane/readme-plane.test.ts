/**
 * docs/OPERATIONS.md's first flow, pasted as a new user would: start the
 * plane (`npm start` is `node bin/waymark.mjs plane` once built), run its
 * `npx waymark plane …` lines in another process while it runs, connect a
 * client with the new key, revoke it; then the keys docs/GUIDE.md's Approvals
 * section makes. On PGlite (the default) and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call } from '../helpers/plane.js';
import { docSection, readDoc } from '../helpers/docs.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import {
  endGroup,
  hasExited,
  pollUntil,
  refusedWithin,
  ROOT,
  serverPid,
  startPlaneProcess,
  waymarkAsync,
  type PlaneProcess,
} from '../helpers/plane-process.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-readme-plane-');
afterAll(() => tmp.cleanup());

/** The shell block of OPERATIONS' "Starting the plane and managing keys" section. */
function readmeShell(): { start: string; commands: string[] } {
  const section = docSection(readDoc('docs/OPERATIONS.md'), '## Starting the plane and managing keys');
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("no sh block in OPERATIONS' plane section");
  const lines = block[1]
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#'));
  return { start: lines[0], commands: lines.slice(1) };
}

function readmeFlow(name: string, env: () => Record<string, string>) {
  let plane: PlaneProcess | null = null;
  afterAll(async () => plane?.kill());

  it(`OPERATIONS plane section on ${name}: start, create a key while the plane runs, connect a client, revoke the key`, async () => {
    const { start, commands } = readmeShell();
    expect(start).toBe('npm start');
    // one bound for a revocation wherever the docs state it, docs/RELIABILITY.md's (measured below)
    const prose = readDoc('docs/OPERATIONS.md').replace(/\s+/g, ' ');
    expect(commands.find((l) => l.includes('keys revoke'))).toBeDefined();
    expect(prose).toMatch(/\b[Aa] revoked key is refused by every plane process within 1 s/);
    expect(prose).toContain('# refused by every plane process within 1 s');
    expect(prose).not.toMatch(/revo\w+ holds everywhere at once/);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start).toBe(
      'npm run build && node bin/waymark.mjs plane',
    );
    const cwd = tmp.file(name);
    mkdirSync(cwd, { recursive: true });
    // as `npm start` runs it, from the user's project directory; port 0 instead of 4600 so test files may run side by side
    plane = await startPlaneProcess([], { cwd, env: { WAYMARK_PORT: '0', ...env() } });
    expect(plane.stdout()).toContain(`written to ${join(cwd, '.waymark/plane/admin-key')} (mode 0600)`);

    let key = '';
    const outputs: string[] = [];
    for (const line of commands) {
      expect(line, 'the commands are `npx waymark …`').toMatch(/^npx waymark /);
      const args = line
        .replace(/^npx waymark /, '')
        .replace('KEY_ID', key.slice(3, 19))
        .split(/\s+/);
      const r = await waymarkAsync(args, { cwd, env: env() });
      expect(r.code, `${line}\n${r.stderr}`).toBe(0);
      outputs.push(r.stdout);
      if (args[1] === 'keys' && args[2] === 'create') {
        key = r.stdout.trim().split('\n').pop()!;
        // the running plane accepts the key at once; a client connects with it and syncs
        expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
        const store = new SqliteCheckpointer({ path: join(cwd, 'runs.db') });
        const replica = connectPlane(store, { url: plane.url, apiKey: key });
        try {
          await store.put(step('readme-run', 0));
          const s = await replica.flush({ timeoutMs: 30_000 });
          expect(s).toMatchObject({ pendingRows: 0, rowsSynced: 1, lastError: null });
          expect((await call(`${plane.url}/v1/executions/readme-run`, { key })).body.execution).toMatchObject({
            executionId: 'readme-run',
          });
        } finally {
          await replica.stop();
          await store.close();
        }
      }
      if (args[1] === 'keys' && args[2] === 'list')
        expect(r.stdout).toMatch(new RegExp(`${key.slice(3, 19)}\\s+local\\s+ingest,read\\s+key\\s+active`));
      if (args[1] === 'keys' && args[2] === 'revoke') {
        expect(r.stdout.trim()).toMatch(new RegExp(`^revoked ${key.slice(3, 19)} through `));
        // OPERATIONS' "refused within 1 s": counted from the revoke command's return, by when each request was sent
        // (not by how long this machine took to answer it)
        await refusedWithin(
          async () => (await call(`${plane!.url}/v1/executions`, { key })).status,
          performance.now(),
          1000,
        );
        // the client's next batch is refused too: its drain parks in auth_failed
        const store = new SqliteCheckpointer({ path: join(cwd, 'runs.db') });
        const replica = connectPlane(store, { url: plane.url, apiKey: key });
        try {
          await store.put(step('readme-run', 1));
          await pollUntil(async () => (await replica.status()).state === 'auth_failed', 30_000);
        } finally {
          await replica.stop();
          await store.close();
        }
      }
    }
    expect(outputs.join('')).toMatch(/project acme created/);

    // the GUIDE's Approvals section's keys, as written there: the worker's ingest,read key (its last line exported) and alice's approve key
    const approvals = docSection(readDoc('docs/GUIDE.md'), '## Approvals');
    const exported = /^export WAYMARK_API_KEY=\$\((npx waymark plane keys create [^|]+)\| tail -n 1\)$/m
      .exec(approvals)?.[1]
      ?.trim();
    const approveKey = /`(npx waymark plane keys create [^`]*--scopes approve[^`]*)`/.exec(approvals)?.[1];
    expect([exported, approveKey]).toEqual([
      'npx waymark plane keys create --project local --scopes ingest,read --name decision-worker',
      'npx waymark plane keys create --project local --scopes approve --name alice',
    ]);
    for (const line of [exported!, approveKey!]) {
      const r = await waymarkAsync(line.replace(/^npx waymark /, '').split(/\s+/), { cwd, env: env() });
      expect(r.code, `${line}\n${r.stderr}`).toBe(0);
      expect((await call(`${plane.url}/v1/pauses`, { key: r.stdout.trim().split('\n').pop()! })).status).toBe(200);
    }
    const listed = await waymarkAsync(['plane', 'keys', 'list'], { cwd, env: env() });
    expect(listed.stdout).toMatch(/local\s+ingest,read\s+decision-worker\s+active/);
    expect(listed.stdout).toMatch(/local\s+approve\s+alice\s+active/);
    await plane.stop();
  });
}

describe('OPERATIONS plane section on PGlite (the default)', () => {
  readmeFlow('pglite', () => ({}));
});

const pg = await pgReady('OPERATIONS plane section on postgres');
describe.skipIf(!pg)('OPERATIONS plane section on Postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_readme_plane');
  });
  afterAll(async () => db?.drop());
  readmeFlow('postgres', () => ({ WAYMARK_DATABASE_URL: db.url }));
});

describe('npm start', () => {
  /** package.json's start script as npm runs it (`sh -c`); dist/ is built once for the suite, so the build step becomes `true`. */
  const startShell = (dataDir: string) => {
    const script: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start;
    const shell = `${script.replace(/^npm run build && /, 'true && ')} --port 0 --data-dir ${dataDir}`;
    expect(shell).toMatch(/^true && node /);
    return shell;
  };
  const serving = async (url: string) => (await fetch(`${url}/healthz`).catch(() => null))?.status === 200;

  it('stops the plane when npm goes: SIGTERM to the script’s shell (which dash does not pass on) ends the plane it left', async () => {
    const dataDir = tmp.file('npm-start');
    // npm forwards SIGTERM to the shell it ran the script in, and sets npm_lifecycle_event in its environment
    const plane = await startPlaneProcess([], {
      command: ['sh', ['-c', startShell(dataDir)]],
      env: { npm_lifecycle_event: 'start' },
    });
    const shell = plane.child.pid!;
    try {
      expect(await serving(plane.url)).toBe(true);
      const server = serverPid(shell);
      plane.child.kill('SIGTERM');
      // reparented, the plane closes as on SIGTERM: the port, then the database, whose data-dir lock goes last before exit 0
      await pollUntil(
        async () => hasExited(server) && !existsSync(join(dataDir, 'plane.lock')) && !(await serving(plane.url)),
        60_000,
        100,
      );
    } finally {
      endGroup(shell);
    }
  });

  it('leaves a plane that npm did not start serving when the shell that started it exits', async () => {
    // the suite itself runs under `npm test`, whose npm_lifecycle_event children inherit: this plane is started as from a terminal
    const plane = await startPlaneProcess([], {
      command: ['sh', ['-c', startShell(tmp.file('shell-start'))]],
      env: { npm_lifecycle_event: '' },
    });
    const shell = plane.child.pid!;
    try {
      const server = serverPid(shell);
      plane.child.kill('SIGTERM');
      await pollUntil(async () => hasExited(shell), 60_000, 100);
      // well past the plane's one-second check of its parent
      await new Promise((r) => setTimeout(r, 2500));
      expect(hasExited(server)).toBe(false);
      expect(await serving(plane.url)).toBe(true);
    } finally {
      endGroup(shell);
    }
  });
});
