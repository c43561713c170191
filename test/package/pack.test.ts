/**
 * The published package: `npm pack`, install the
 * tarball into a fresh project, and type-check every subpath in a strict
 * consumer (`skipLibCheck: false`, moduleResolution node16 and bundler) with
 * the repo's TypeScript.
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
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { devSpec, RESOLUTIONS, SUBPATHS, TYPE_PEERS, writeStrictTsconfig } from '../helpers/consumer.js';
import { scratchDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const tmp = scratchDir('waymark-pack-');
afterAll(() => tmp.cleanup());

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
  it('packs, installs into a fresh project without warnings of its own, type-checks every subpath strictly; waymark/postgres without postgres says to install it', () => {
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

    const app = tmp.file('consumer');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }),
    );
    const install = npm(['install', tarball], app);
    expect(
      `${install.stdout}${install.stderr}`.split('\n').filter((l) => /warn/i.test(l) && /waymark/i.test(l)),
    ).toEqual([]);

    // an optional peer left out: the subpath says what to install
    const missing = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('waymark/postgres')"], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("waymark/postgres needs the 'postgres' package");
    expect(missing.stderr).toContain('npm install postgres@3.4.9');
    // and a plane on Postgres from the installed bin (it printed Node's ERR_MODULE_NOT_FOUND)
    const planeDir = tmp.file('pg-plane-dir');
    const pgPlane = spawnSync(
      process.execPath,
      [
        'node_modules/.bin/waymark',
        'plane',
        '--database-url',
        'postgres://127.0.0.1:1/none',
        '--data-dir',
        planeDir,
        '--port',
        '0',
      ],
      {
        cwd: app,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(pgPlane.status, pgPlane.stderr).toBe(1);
    expect(pgPlane.stderr).toContain("MISSING_PEER: a plane on Postgres (--database-url) needs the 'postgres' package");
    expect(pgPlane.stderr).toContain('npm install postgres@3.4.9');
    // waymark/testing's suite declares vitest tests: without vitest the fault hooks load, and the suite says what to install
    const noVitest = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const t = await import('waymark/testing'); console.log(typeof t.killAt, typeof t.faultPoint); t.runStoreSuite({ name: 'x', make: () => null })",
      ],
      { cwd: app, encoding: 'utf8' },
    );
    expect(noVitest.stdout.trim()).toBe('function function');
    expect(noVitest.status).not.toBe(0);
    expect(noVitest.stderr).toContain("runStoreSuite (waymark/testing) needs the 'vitest' package");
    // test helpers live in waymark/testing, not in the root entry
    const root = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "console.log(Object.keys(await import('waymark')).join(' '))"],
      { cwd: app, encoding: 'utf8' },
    );
    expect(root.stdout.split(/\s+/)).toContain('openStore');
    expect(root.stdout.split(/\s+/)).not.toContain('killAt');
    expect(
      spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "await import('waymark'); await import('waymark/wire'); await import('waymark/plane')",
        ],
        { cwd: app, encoding: 'utf8' },
      ).status,
    ).toBe(0);

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
    for (const peer of ['vitest', 'better-sqlite3'])
      symlinkSync(join(ROOT, 'node_modules', peer), join(app, 'node_modules', peer), 'dir');
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
    const ui = spawnSync(process.execPath, ['ui-smoke.mjs'], { cwd: app, encoding: 'utf8', timeout: 300_000 });
    expect(ui.status, `${ui.stdout}${ui.stderr}`).toBe(0);
    expect(ui.stdout).toContain('served packed-run');
  }, 900_000); // npm pack, two installs, four type-checks and a nested vitest: minutes on a loaded machine
});

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
