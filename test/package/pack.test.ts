/**
 * The published package: `npm pack`, install the tarball into a fresh
 * project, and type-check every subpath in a strict consumer (`skipLibCheck:
 * false`, moduleResolution node16 and bundler) with the repo's TypeScript.
 *
 * The first install is a client's, as the README gives it (the tarball and
 * better-sqlite3): it must hold none of the plane's packages (optional peers),
 * run the quick start, and have `waymark plane`, `waymark ui` and
 * `waymark/plane` name what to install. The command the plane prints is then
 * run as printed, and the plane starts. It logs the tarball's size and the
 * client install's package count and size.
 *
 * It packs a copy of the package's sources (node_modules linked), so its
 * `prepack` builds dist/ from nothing there: running it in the repository
 * would rewrite the dist/ that test/global-setup.ts built while other test
 * files' child processes load it (a plane started mid-rewrite saw
 * half-written modules and exited).
 *
 * NETWORK: npm installs with --prefer-offline: from the local npm cache when it
 * holds the packages, else from the registry.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { devSpec, RESOLUTIONS, SUBPATHS, TYPE_PEERS, writeStrictTsconfig } from '../helpers/consumer.js';
import { scratchDir } from '../helpers/tmp.js';
import { PLANE_PEERS } from '../../support/peer.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const tmp = scratchDir('waymark-pack-');
afterAll(() => tmp.cleanup());
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

/** The plane's packages, in the order its MISSING_PEER command names them (each at its devDependencies version): none is in a client install. */
const PLANE_ONLY = PLANE_PEERS;

/** What `npm pack` reads and `prepack` compiles, copied to a fresh tree; no dist/. */
const SOURCES = [
  'package.json',
  'package-lock.json',
  'README.md',
  'LICENSE',
  'tsconfig.json',
  'tsconfig.build.json',
  'bin',
  'drizzle',
  'client',
  'shared',
  'support',
  'inspector',
  'plane',
];

function sourceTree(): string {
  const dir = tmp.file('source');
  for (const entry of SOURCES) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function npm(args: string[], cwd: string): { stdout: string; stderr: string } {
  const r = spawnSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
  });
  expect(r.status, `npm ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('the npm package (needs the npm cache or the registry)', () => {
  it('packs without source maps; installed with better-sqlite3 only it holds no plane package, runs the quick start and waymark runs, and waymark plane, waymark ui and waymark/plane name the peers to install; with the printed command the plane starts; every subpath type-checks strictly', async () => {
    const out = tmp.file('pack');
    execFileSync('mkdir', ['-p', out]);
    const source = sourceTree();
    expect(existsSync(join(source, 'dist'))).toBe(false);
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', out], {
        cwd: source,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as {
      filename: string;
      size: number;
      unpackedSize: number;
      files: { path: string }[];
    }[];
    const tarball = join(out, packed[0].filename);
    const files = packed[0].files.map((f) => f.path);
    for (const f of [
      'bin/waymark.mjs',
      'dist/client/index.d.ts',
      'dist/client/testing/index.d.ts',
      'dist/plane/index.d.ts',
      'drizzle/0000_init.sql',
    ])
      expect(files).toContain(f);
    expect(files.some((f) => f.startsWith('test/') || f.startsWith('dist/test/'))).toBe(false);
    // the maps were half the tarball; nothing in an installed package reads them
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    console.log(`tarball: ${packed[0].size} bytes (${packed[0].unpackedSize} unpacked, ${files.length} files)`);

    // a client install, as the README gives it: waymark and the SQLite driver
    const app = tmp.file('consumer');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }),
    );
    const install = npm(['install', tarball, devSpec('better-sqlite3')], app);
    expect(
      `${install.stdout}${install.stderr}`.split('\n').filter((l) => /warn/i.test(l) && /waymark/i.test(l)),
    ).toEqual([]);
    // --ignore-scripts left better-sqlite3 without its compiled addon: the repository's build stands in for the
    // one its install script would fetch
    const addon = 'better-sqlite3/build/Release/better_sqlite3.node';
    mkdirSync(dirname(join(app, 'node_modules', addon)), { recursive: true });
    cpSync(join(ROOT, 'node_modules', addon), join(app, 'node_modules', addon));
    const present = (name: string) => existsSync(join(app, 'node_modules', name));
    expect(PLANE_ONLY.filter(present)).toEqual([]);
    const packages = /added (\d+) packages?/.exec(install.stdout)?.[1];
    const size = execFileSync('du', ['-sh', 'node_modules'], { cwd: app, encoding: 'utf8' }).split('\t')[0];
    console.log(`client install (npm install waymark better-sqlite3): ${packages} packages, ${size} node_modules`);

    // the README's quick start, run as written (tsx from the repository), then the CLI on its store
    const block = /```ts\n\/\/ quickstart: refund\.ts\n([\s\S]*?)```/.exec(
      readFileSync(join(ROOT, 'README.md'), 'utf8'),
    );
    expect(block).not.toBeNull();
    writeFileSync(join(app, 'refund.ts'), block![1]!);
    const tsx = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
    const quick = (arg: string) =>
      spawnSync(process.execPath, ['--import', tsx, 'refund.ts', arg], { cwd: app, encoding: 'utf8' });
    const started = quick('start');
    expect(started.status, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/^paused \{ order: '1042', amount: 5000 \}/);
    const approved = quick('approve');
    expect(approved.status, approved.stderr).toBe(0);
    expect(approved.stdout).toBe('charging 5000 for order 1042\ncompleted Refund for order 1042 is on its way.\n');
    const waymark = (...args: string[]) =>
      spawnSync(process.execPath, ['node_modules/.bin/waymark', ...args], {
        cwd: app,
        encoding: 'utf8',
        timeout: 120_000,
      });
    const runs = waymark('runs', '--db', 'runs.db');
    expect([runs.status, runs.stderr]).toEqual([0, '']);
    expect(runs.stdout).toMatch(/refund-1042\s.*completed/);

    // the plane from a client install: every missing peer named, with the one command that installs them
    const planeDir = tmp.file('plane-dir');
    const noPeers = waymark('plane', '--data-dir', planeDir, '--port', '0');
    expect(noPeers.status, noPeers.stderr).toBe(1);
    expect(noPeers.stderr).toContain('MISSING_PEER: waymark plane needs packages that are optional peer dependencies');
    for (const name of ['@electric-sql/pglite', 'drizzle-orm', 'hono', '@hono/node-server', 'pino', 'prom-client'])
      expect(noPeers.stderr).toContain(`'${name}'`);
    const planeCommand = `npm install ${PLANE_ONLY.map((p) => `${p}@${pkg.devDependencies[p]}`).join(' ')}`;
    expect(noPeers.stderr).toContain(`'${planeCommand}'`);
    expect(existsSync(planeDir)).toBe(false);
    const ui = waymark('ui', '--db', 'runs.db', '--port', '0');
    expect(ui.status, ui.stderr).toBe(1);
    expect(ui.stderr).toContain(
      `MISSING_PEER: waymark ui needs packages that are optional peer dependencies of waymark and are not installed: 'hono', '@hono/node-server': install them with 'npm install hono@${pkg.devDependencies.hono} @hono/node-server@${pkg.devDependencies['@hono/node-server']}'`,
    );
    const planeEntry = node("await import('waymark/plane')", app);
    expect(planeEntry.status).not.toBe(0);
    expect(planeEntry.stderr).toContain('waymark/plane needs packages that are optional peer dependencies');
    expect(planeEntry.stderr).toContain(planeCommand);

    // an optional peer left out: the subpath says what to install
    const missing = node("await import('waymark/postgres')", app);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("waymark/postgres needs the 'postgres' package");
    expect(missing.stderr).toContain('npm install postgres@3.4.9');
    // waymark/testing's suite declares vitest tests: without vitest the fault hooks load, and the suite says what to install
    const noVitest = node(
      "const t = await import('waymark/testing'); console.log(typeof t.killAt, typeof t.faultPoint); t.runStoreSuite({ name: 'x', make: () => null })",
      app,
    );
    expect(noVitest.stdout.trim()).toBe('function function');
    expect(noVitest.status).not.toBe(0);
    expect(noVitest.stderr).toContain("runStoreSuite (waymark/testing) needs the 'vitest' package");
    // test helpers live in waymark/testing, not in the root entry
    const root = node("console.log(Object.keys(await import('waymark')).join(' '))", app);
    expect(root.stdout.split(/\s+/)).toContain('openStore');
    expect(root.stdout.split(/\s+/)).not.toContain('killAt');
    // every client subpath loads with its own peers and none of the plane's (linked from the repository for this
    // check; the next install removes the links)
    const clientPeers = ['postgres', '@langchain/core', '@langchain/langgraph-checkpoint', '@ai-sdk/provider'];
    for (const peer of clientPeers) {
      mkdirSync(dirname(join(app, 'node_modules', peer)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', peer), join(app, 'node_modules', peer), 'dir');
    }
    const client = SUBPATHS.filter((s) => s !== 'waymark/plane');
    const loaded = node(`for (const s of ${JSON.stringify(client)}) await import(s); console.log('loaded')`, app);
    expect([loaded.stdout, loaded.stderr]).toEqual(['loaded\n', '']);
    for (const peer of clientPeers) rmSync(join(app, 'node_modules', peer));

    // the command the plane printed, run as printed: the plane starts
    const printed = /'npm install ([^']+)'/.exec(noPeers.stderr)![1]!.split(' ');
    npm(['install', ...printed], app);
    expect(PLANE_ONLY.filter((p) => !present(p))).toEqual([]);
    const started2 = await planeStarts(app, planeDir);
    expect(started2.line).toMatch(/^waymark plane listening on http:\/\/127\.0\.0\.1:\d+ \(database: pglite/);
    expect(started2.code, started2.output).toBe(0);
    expect(node("await import('waymark/plane')", app).status).toBe(0);
    // and a plane on Postgres from the installed bin, without postgres (it printed Node's ERR_MODULE_NOT_FOUND)
    const pgPlane = waymark(
      'plane',
      '--database-url',
      'postgres://127.0.0.1:1/none',
      '--data-dir',
      tmp.file('pg-plane-dir'),
      '--port',
      '0',
    );
    expect(pgPlane.status, pgPlane.stderr).toBe(1);
    expect(pgPlane.stderr).toContain("MISSING_PEER: a plane on Postgres (--database-url) needs the 'postgres' package");
    expect(pgPlane.stderr).toContain('npm install postgres@3.4.9');

    // what a user of every subpath has: the peers (their types) and @types/node
    npm(['install', devSpec('@types/node'), ...TYPE_PEERS.map(devSpec)], app);
    writeFileSync(
      join(app, 'index.ts'),
      `${SUBPATHS.map((s, i) => `import * as m${i} from '${s}';`).join('\n')}\nexport const all = [${SUBPATHS.map((_, i) => `m${i}`).join(', ')}];\n`,
    );
    for (const [moduleResolution, module] of RESOLUTIONS) {
      const tsc = spawnSync(process.execPath, [TSC, '-p', writeStrictTsconfig(app, moduleResolution, module)], {
        cwd: app,
        encoding: 'utf8',
        timeout: 300_000,
      });
      expect(`${tsc.stdout}${tsc.stderr}`, `moduleResolution ${moduleResolution}`).toBe('');
      expect(tsc.status).toBe(0);
    }

    // a third-party store runs the conformance suite from waymark/testing under its own vitest
    // (here the SQLite adapter stands in for that store; a few of the tests, one skipped with its reason)
    symlinkSync(join(ROOT, 'node_modules', 'vitest'), join(app, 'node_modules', 'vitest'), 'dir');
    writeFileSync(join(app, 'store.test.ts'), THIRD_PARTY_SUITE);
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        'store.test.ts',
        '--reporter=verbose',
        '-t',
        'setup is idempotent|outbox',
      ],
      {
        cwd: app,
        encoding: 'utf8',
        timeout: 300_000,
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/store contract: a third-party store > every change queues one outbox event/);
    expect(run.stdout).toContain('setup is idempotent — skipped: shows how a store skips a test, with its reason');
    expect(run.stdout).toMatch(/Tests\s+[1-9]\d* passed/);

    // `waymark ui` from the installed package: the bin serves the inspector's pages over a store of the user's
    writeFileSync(join(app, 'ui-smoke.mjs'), UI_SMOKE);
    const smoke = spawnSync(process.execPath, ['ui-smoke.mjs'], { cwd: app, encoding: 'utf8', timeout: 300_000 });
    expect(smoke.status, `${smoke.stdout}${smoke.stderr}`).toBe(0);
    expect(smoke.stdout).toContain('served packed-run');
  }, 900_000); // npm pack, four installs, four type-checks, a plane start and a nested vitest: minutes on a loaded machine
});

/** `node -e` of an ES module script in `cwd`. */
function node(script: string, cwd: string) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
}

/** Starts the installed `waymark plane --port 0` on `dataDir`, waits for its listening line, stops it with SIGTERM. */
async function planeStarts(
  cwd: string,
  dataDir: string,
): Promise<{ line: string; code: number | null; output: string }> {
  const child = spawn(process.execPath, ['node_modules/.bin/waymark', 'plane', '--data-dir', dataDir, '--port', '0'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s: ${output}`)), 120_000);
    const check = () => {
      const m = /^waymark plane listening on .*$/m.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    };
    child.stdout.on('data', (d) => ((output += d), check()));
    child.stderr.on('data', (d) => (output += d));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`waymark plane exited ${code} before listening: ${output}`));
    });
  });
  child.kill('SIGTERM');
  return { line, code: await exited, output };
}

/** Makes a store, starts the installed `waymark ui` on it, reads its run list, stops it. */
const UI_SMOKE = `import { spawn } from 'node:child_process';
import { SqliteCheckpointer } from 'waymark/sqlite';

const store = new SqliteCheckpointer({ path: 'runs.db' });
await store.put({ executionId: 'packed-run', nodeId: 'n', turn: 0, step: 'llm_call', status: 'completed', agentPath: 'agent:a', state: { messages: [] } });
await store.close();
const child = spawn(process.execPath, ['node_modules/.bin/waymark', 'ui', '--db', 'runs.db', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
const url = await new Promise((resolve, reject) => {
  child.stdout.on('data', (d) => {
    out += d;
    const m = /listening on (http:\\/\\/\\S+?)\\/? /.exec(out);
    if (m) resolve(m[1]);
  });
  child.once('exit', (code) => reject(new Error('waymark ui exited ' + code + ': ' + out)));
});
const page = await (await fetch(url + '/')).text();
child.kill('SIGTERM');
if (!page.includes('packed-run')) throw new Error('the run list lacks packed-run: ' + page.slice(0, 500));
console.log('served packed-run');
`;

const THIRD_PARTY_SUITE = `import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runStoreSuite } from 'waymark/testing';
import { SqliteCheckpointer } from 'waymark/sqlite';

const dir = join(process.cwd(), 'stores');
mkdirSync(dir, { recursive: true });
let n = 0;

runStoreSuite({
  name: 'a third-party store',
  async make({ faults }) {
    const path = join(dir, \`s\${++n}.db\`);
    const store = new SqliteCheckpointer({ path, faults });
    return {
      store,
      async corrupt(rowId, column, text) {
        store.connection.prepare(\`UPDATE checkpoints SET \${column} = ? WHERE id = ?\`).run(text, rowId);
      },
      reopen: async () => new SqliteCheckpointer({ path }),
      close: () => store.close(),
    };
  },
  skip: [{ test: 'setup is idempotent', reason: 'shows how a store skips a test, with its reason' }],
});
`;
