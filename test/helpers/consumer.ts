/**
 * A strict TypeScript consumer of the packed package, as test/package/pack.test.ts
 * and test/types/consumer-node-types.test.ts build it: every subpath imported,
 * the peers whose types the subpaths name, and a `strict`, `skipLibCheck: false`
 * tsconfig per module resolution docs/GUIDE.md promises.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };

/** Every subpath of the package, as a consumer imports it. */
export const SUBPATHS = Object.keys(pkg.exports).map((k) => (k === '.' ? 'waymark' : `waymark/${k.slice(2)}`));

/** `name@version` of a package at the version this repository is tested with. */
export const devSpec = (name: string) =>
  `${name}@${JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version}`;

/** The peers (or their types) that the subpaths' declarations name, besides @types/node (pino: waymark/plane's logger). */
export const TYPE_PEERS = [
  '@types/better-sqlite3',
  'postgres',
  '@ai-sdk/provider',
  '@types/json-schema',
  '@langchain/core',
  '@langchain/langgraph-checkpoint',
  'pino',
];

/** The module resolutions docs/GUIDE.md promises, each with its `module`. */
export const RESOLUTIONS = [
  ['node16', 'node16'],
  ['bundler', 'esnext'],
] as const;

/** Write `tsconfig.<resolution>.json` in `app`: strict, skipLibCheck false, no emit, node's types, checking `files`. */
export function writeStrictTsconfig(
  app: string,
  moduleResolution: string,
  module: string,
  files: string[] = ['index.ts'],
): string {
  const name = `tsconfig.${moduleResolution}.json`;
  writeFileSync(
    join(app, name),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        module,
        moduleResolution,
        target: 'es2022',
        types: ['node'],
      },
      files,
    }),
  );
  return name;
}
