/**
 * The layering of DESIGN.md, read from the source: `shared/` is the wire
 * contract and imports no other room; `support/` (what client and plane both
 * run: CLI parsing, terminal text, body reading, database errors, fault
 * points) imports only `shared/`; `client/` never imports `plane/` and the
 * plane never imports `client/`; the inspector's shared pages (`inspector/`)
 * import neither; no module of `plane/` and no file of `client/runtime/`
 * imports another of its room in a circle; and the root entry loads no hono.
 *
 * The layer rules and the circle check count every import a file names (static, type-only, and
 * `import('…')` whether a call or a type), read from the text. What the root
 * entry loads is asked of esbuild instead, which resolves each import, drops
 * the ones TypeScript erases and adds the JSX runtime a .tsx file pulls in.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LAYERS = ['client', 'shared', 'support', 'inspector', 'plane'] as const;
type Layer = (typeof LAYERS)[number];

/** What each layer may not import. */
const FORBIDDEN: Record<Layer, Layer[]> = {
  client: ['plane'],
  inspector: ['client', 'plane'],
  shared: ['client', 'support', 'inspector', 'plane'],
  support: ['client', 'inspector', 'plane'],
  plane: ['client'],
};

/** The package's own subpaths (package.json `exports`), by the layer they load. */
const SELF: Record<string, Layer> = {
  waymark: 'client',
  'waymark/sqlite': 'client',
  'waymark/postgres': 'client',
  'waymark/ai-sdk': 'client',
  'waymark/langgraph': 'client',
  'waymark/testing': 'client',
  'waymark/wire': 'shared',
  'waymark/plane': 'plane',
};

// `import … from '…'`, `export … from '…'` (type-only ones too, over several lines), `import '…'`
const STATIC = /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
// `import('…')`, a call or a type
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every module specifier the file names. */
function specifiersOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...[...text.matchAll(STATIC)].map((m) => m[1] ?? m[2]), ...[...text.matchAll(DYNAMIC)].map((m) => m[1])];
}

function sourcesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The source file a relative specifier names (`./x.js` is `./x.ts` or `./x.tsx`). */
function resolveRelative(from: string, spec: string): string {
  const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')])
    if (existsSync(candidate)) return candidate;
  throw new Error(`${relative(ROOT, from)}: cannot resolve '${spec}'`);
}

const layerOf = (file: string): string => relative(ROOT, file).split('/')[0];
const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

/** The layer an import reaches, or null for a package outside the project (or a builtin). */
function targetLayer(from: string, spec: string): string | null {
  if (spec.startsWith('.')) return layerOf(resolveRelative(from, spec));
  return SELF[spec] ?? null;
}

/**
 * Every file and package `entry` loads when imported, by esbuild's resolver:
 * static imports only (a dynamic `import()` loads later, on demand).
 */
async function runtimeGraph(entry: string): Promise<{ files: Set<string>; packages: Set<string> }> {
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    outdir: 'out',
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  const inputs: Metafile['inputs'] = metafile.inputs;
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const imp of inputs[file].imports) {
      if (imp.kind !== 'import-statement') continue;
      if (imp.external) packages.add(packageOf(imp.path));
      else visit(imp.path);
    }
  };
  visit(entry);
  return { files, packages };
}

/**
 * Every import circle among the sources under `dir` (relative imports within
 * it, type-only ones included), each as `a.ts -> b.ts -> a.ts`; `least` is how
 * many files the room must hold, so an emptied or renamed room is not a pass.
 */
function circlesIn(dir: string, least: number): string[] {
  const files = sourcesUnder(dir);
  expect(files.length).toBeGreaterThan(least);
  const importsOf = (file: string) =>
    specifiersOf(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolveRelative(file, spec))
      .filter((target) => target.startsWith(`${dir}/`));
  // depth first: an import of a file still open on the path closes a circle
  const circles: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    path.push(file);
    for (const next of importsOf(file)) {
      const at = path.indexOf(next);
      if (at >= 0) circles.push([...path.slice(at), next].map((f) => relative(dir, f)).join(' -> '));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of files) if (!done.has(file)) visit(file);
  return circles;
}

describe('layering', () => {
  it('client/ and plane/ never import each other; inspector/ imports neither; support/ imports only shared/; shared/ imports no other room', () => {
    const crossings: string[] = [];
    let scanned = 0;
    for (const layer of LAYERS) {
      for (const file of sourcesUnder(join(ROOT, layer))) {
        scanned++;
        for (const spec of specifiersOf(file)) {
          const target = targetLayer(file, spec);
          if (target && (FORBIDDEN[layer] as string[]).includes(target))
            crossings.push(`${relative(ROOT, file)} imports '${spec}' (${target}/)`);
        }
      }
    }
    expect(scanned).toBeGreaterThan(100);
    expect(crossings).toEqual([]);
  });

  it('inspector/ imports only shared/, support/, hono and node builtins', () => {
    const files = sourcesUnder(join(ROOT, 'inspector'));
    expect(files.length).toBeGreaterThan(0);
    const outside: string[] = [];
    for (const file of files) {
      for (const spec of specifiersOf(file)) {
        const ok = spec.startsWith('.')
          ? ['inspector', 'shared', 'support'].includes(layerOf(resolveRelative(file, spec)))
          : spec.startsWith('node:') || packageOf(spec) === 'hono';
        if (!ok) outside.push(`${relative(ROOT, file)} imports '${spec}'`);
      }
    }
    expect(outside).toEqual([]);
  });

  // a circle of type-only imports counts too: a reader follows it as any other, and a value import joins it easily
  it('no module of plane/ imports another in a circle, type-only imports included', () => {
    expect(circlesIn(join(ROOT, 'plane'), 20)).toEqual([]);
  });

  it('the files of client/runtime/ import each other in no circle, type-only imports included', () => {
    expect(circlesIn(join(ROOT, 'client', 'runtime'), 5)).toEqual([]);
  });

  it('the root entry (client/index.ts) loads no hono, no inspector/ and no plane/ through its static imports', async () => {
    const { files, packages } = await runtimeGraph('client/index.ts');
    expect(files.size).toBeGreaterThan(10);
    expect([...packages].filter((p) => p.includes('hono'))).toEqual([]);
    expect(
      [...files].filter((f) => f.startsWith('inspector/') || f.startsWith('plane/') || f.startsWith('client/ui/')),
    ).toEqual([]);
    // the same walk sees hono where it is loaded: the local UI, through its pages
    const ui = await runtimeGraph('client/ui/serve.tsx');
    expect(ui.packages).toContain('hono');
  });

  it('a SQLite-only user loads no postgres, drizzle or hono: neither the root entry nor waymark/sqlite does, and waymark/postgres loads no drizzle or hono', async () => {
    const heavy = (entry: string, names: string[]) =>
      runtimeGraph(entry).then(({ packages }) =>
        [...packages].filter((p) => names.some((n) => p === n || p.startsWith(`${n}/`))),
      );
    expect(
      await heavy('client/index.ts', ['postgres', 'drizzle-orm', 'hono', '@hono/node-server', '@electric-sql/pglite']),
    ).toEqual([]);
    expect(
      await heavy('client/sqlite/index.ts', [
        'postgres',
        'drizzle-orm',
        'hono',
        '@hono/node-server',
        '@electric-sql/pglite',
      ]),
    ).toEqual([]);
    expect(
      await heavy('client/postgres/index.ts', ['drizzle-orm', 'hono', '@hono/node-server', '@electric-sql/pglite']),
    ).toEqual([]);
    // the same walk sees a driver where one is loaded statically: the plane's database layer
    expect((await runtimeGraph('plane/db/open.ts')).packages).toContain('drizzle-orm');
  });
});
