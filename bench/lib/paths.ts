/**
 * Where a bench finds the repository and its own sibling files, whether it runs
 * from source under tsx (`bench/x.ts`) or compiled by `npm run bench` to plain
 * JavaScript (`.bench-build/bench/x.js`, as the package ships: see bench/run.ts).
 */
import { existsSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest directory above bench/lib holding bin/waymark.mjs. */
export const ROOT = ((): string => {
  for (const rel of ['../..', '../../..']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, 'bin', 'waymark.mjs'))) return dir;
  }
  throw new Error('bench: the repository root (holding bin/waymark.mjs) is not above bench/lib');
})();

/** The installed peer (LangGraph JS), always in the source tree. */
export const PEER_DIR = join(ROOT, 'bench', 'peers', 'langgraph');

/**
 * How to start `name` (a bench file without extension, beside `self`, the
 * caller's `import.meta.url`) in a child process the way this one runs: the same
 * extension (.ts or .js) and the same node options (tsx's loader, or none).
 */
export function childCommand(self: string, name: string): string[] {
  return [...process.execArgv, fileURLToPath(new URL(`${name}${extname(fileURLToPath(self))}`, self))];
}
