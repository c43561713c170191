/**
 * Where a bench finds the repository and its own sibling files, whether it runs
 * from source under tsx (`bench/x.ts`) or compiled by `npm run bench` to plain
 * JavaScript (`.bench-build/bench/x.js`, as the package ships: see bench/run.ts).
 */
import { existsSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest directory above bench/lib holding bin/waymark.mjs. */
export const ROOT = ((): string => {
  for (const rel of ['../..', '../../..']) {
    const dir = resolve(fileURLToPath(new URL(rel, import.meta.url)));
    if (existsSync(join(dir, 'bin', 'waymark.mjs'))) return dir;
  }
  throw new Error('bench: the repository root (holding bin/waymark.mjs) is not above bench/lib');
})();

/** The installed peer (LangGraph JS), always in the source tree. */
export const PEER_DIR = join(ROOT, 'bench', 'peers', 'langgraph');

/** Node options that load code (tsx's loader): a child needs them to run what its parent runs. */
const LOADER_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/**
 * How to start `name` (a bench file without extension, beside `self`, the
 * caller's `import.meta.url`) in a child process the way this one runs: the same
 * extension (.ts or .js) and the same loader options (tsx's, or none). Other
 * node options (`--cpu-prof`, `--inspect`, heap sizes) stay with the parent:
 * a child's figures (drain-rss's RSS) must not change with how the parent ran.
 */
export function childCommand(self: string, name: string): string[] {
  const loaders: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const [flag] = argv[i].split('=', 1);
    if (!LOADER_FLAGS.has(flag)) continue;
    loaders.push(argv[i]);
    if (!argv[i].includes('=') && i + 1 < argv.length) loaders.push(argv[++i]);
  }
  return [...loaders, fileURLToPath(new URL(`${name}${extname(fileURLToPath(self))}`, self))];
}
