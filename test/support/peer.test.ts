/**
 * The optional peers' one home (support/peer.ts): its version table agrees
 * with package.json, the plane's and the local UI's peer lists hold every
 * package their code loads, the docs print the same install commands, a
 * feature missing several peers names every one in one command, and
 * `waymark/sqlite` (whose driver is loaded with `require`) names its own.
 *
 * The last two run dist/ (built by test/global-setup.ts) from a scratch folder
 * whose node_modules holds only zod (and hono): every other peer is missing
 * there, as in an install without them.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  installCommand,
  PEER_VERSIONS,
  type Peer,
  PLANE_PEERS,
  requirePeer,
  requirePeers,
  UI_PEERS,
} from '../../support/peer.js';
import { type Doc, readDoc } from '../helpers/docs.js';
import { scratchDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
};
const tmp = scratchDir('waymark-peer-');
afterAll(() => tmp.cleanup());

/** The packages `dir`'s sources load at run time (type-only imports left out), by the first file that does. */
function runtimeImports(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(e.name)) {
        const src = readFileSync(p, 'utf8');
        const specs = [
          ...src.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+'([^']+)'/gm),
          ...src.matchAll(/^import\s+'([^']+)'/gm),
          ...src.matchAll(/await import\('([^']+)'\)/g),
          ...src.matchAll(/@jsxImportSource (\S+)/g),
        ].map((m) => m[1]!);
        for (const s of specs) {
          if (s.startsWith('.') || s.startsWith('node:')) continue;
          const name = s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!;
          if (!found.has(name)) found.set(name, relative(ROOT, p));
        }
      }
    }
  };
  walk(join(ROOT, dir));
  return found;
}

describe('optional peers (support/peer.ts)', () => {
  it("every peer's install version is package.json's: its exact peer version, or for a range the version tested with", () => {
    for (const [name, version] of Object.entries(PEER_VERSIONS)) {
      expect(pkg.dependencies[name], `${name} is not a dependency`).toBeUndefined();
      expect(pkg.devDependencies[name], `${name} is tested at ${version}`).toBe(version);
      // declared, drizzle-orm's own optional peers would join waymark's and fail its install (support/peer.ts)
      if (name === 'drizzle-orm') {
        expect(pkg.peerDependencies[name], 'drizzle-orm is not a declared peer').toBeUndefined();
        continue;
      }
      expect(pkg.peerDependenciesMeta[name]?.optional, `${name} is an optional peer`).toBe(true);
      const range = pkg.peerDependencies[name]!;
      if (/^\d/.test(range)) expect(range, name).toBe(version);
      else expect(range, name).toBe(`^${version.split('.')[0]}.0.0`);
    }
  });

  it('the plane and the local UI list every package their code loads that is not a dependency', () => {
    const deps = new Set(Object.keys(pkg.dependencies));
    const plane = [...runtimeImports('plane'), ...runtimeImports('inspector')].filter(([n]) => !deps.has(n));
    // postgres is checked where a plane on Postgres opens it (plane/db/open.ts)
    expect(Object.fromEntries(plane.filter(([n]) => !PLANE_PEERS.includes(n as Peer) && n !== 'postgres'))).toEqual({});
    const ui = [...runtimeImports('client/ui'), ...runtimeImports('inspector')].filter(([n]) => !deps.has(n));
    expect(Object.fromEntries(ui.filter(([n]) => !UI_PEERS.includes(n as Peer)))).toEqual({});
    expect(UI_PEERS.every((p) => PLANE_PEERS.includes(p))).toBe(true);
  });

  it('the docs print the same install commands as the errors', () => {
    const plane = installCommand(PLANE_PEERS);
    expect(plane).toBe(
      'npm install @electric-sql/pglite@0.5.17 drizzle-orm@0.45.4 @hono/zod-openapi@1.6.3 pino@10.4.0 prom-client@15.1.3 hono@4.13.19 @hono/node-server@2.1.9',
    );
    for (const doc of ['README.md', 'docs/GUIDE.md', 'docs/OPERATIONS.md'] as Doc[])
      expect(readDoc(doc), doc).toContain(plane);
    expect(readDoc('docs/GUIDE.md')).toContain(installCommand(UI_PEERS));
  });

  it('resolves when every peer is installed', async () => {
    await expect(requirePeers('waymark plane', PLANE_PEERS)).resolves.toBeUndefined();
  });

  it('names every missing peer, and only those, in one install command (MISSING_PEER)', () => {
    const dir = tmp.file('client-only');
    for (const f of ['support/peer.js', 'shared/errors.js']) {
      mkdirSync(join(dir, 'dist', f, '..'), { recursive: true });
      cpSync(join(ROOT, 'dist', f), join(dir, 'dist', f));
    }
    mkdirSync(join(dir, 'node_modules'));
    for (const name of ['zod', 'hono']) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      join(dir, 'check.mjs'),
      `import { requirePeers, PLANE_PEERS } from './dist/support/peer.js';
try { await requirePeers(process.argv[2], process.argv[3] === 'plane' ? PLANE_PEERS : [process.argv[3]]); console.log('ok'); }
catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }\n`,
    );
    const check = (feature: string, peers: string) => {
      const r = spawnSync(process.execPath, ['check.mjs', feature, peers], { cwd: dir, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.trim() === 'ok' ? 'ok' : JSON.parse(r.stdout);
    };
    const missing = [
      '@electric-sql/pglite',
      'drizzle-orm',
      '@hono/zod-openapi',
      'pino',
      'prom-client',
      '@hono/node-server',
    ];
    const command = `npm install ${missing.map((p) => `${p}@${PEER_VERSIONS[p as Peer]}`).join(' ')}`;
    expect(check('waymark plane', 'plane')).toEqual({
      code: 'MISSING_PEER',
      message: `waymark plane needs packages that are optional peer dependencies of waymark and are not installed: ${missing.map((p) => `'${p}'`).join(', ')}: install them with '${command}'`,
      details: { peers: missing.map((peer) => ({ peer, version: PEER_VERSIONS[peer as Peer] })), command },
    });
    // one missing peer: the sentence names it alone
    expect(check('waymark/postgres', 'postgres').message).toBe(
      "waymark/postgres needs the 'postgres' package, an optional peer dependency of waymark that is not installed: install it with 'npm install postgres@3.4.9'",
    );
    expect(check('waymark ui', 'hono')).toBe('ok');
  });

  it('requirePeer returns a CommonJS peer loaded with require; waymark/sqlite without better-sqlite3 fails at import with MISSING_PEER', () => {
    const Database = requirePeer<new (path: string) => { close(): void }>('waymark/sqlite', 'better-sqlite3');
    new Database(':memory:').close();
    // the built package in a folder whose node_modules holds only zod: the entry's import names the command
    const dir = tmp.file('no-sqlite');
    cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(ROOT, 'node_modules', 'zod'), join(dir, 'node_modules', 'zod'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      join(dir, 'check.mjs'),
      `try { await import('./dist/client/sqlite/index.js'); console.log('ok'); }
catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }\n`,
    );
    const r = spawnSync(process.execPath, ['check.mjs'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      code: 'MISSING_PEER',
      message:
        "waymark/sqlite needs the 'better-sqlite3' package, an optional peer dependency of waymark that is not installed: install it with 'npm install better-sqlite3@12.11.1'",
      details: {
        peers: [{ peer: 'better-sqlite3', version: '12.11.1' }],
        command: 'npm install better-sqlite3@12.11.1',
      },
    });
  });
});
