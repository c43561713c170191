/**
 * Once per test run, side by side:
 * - builds dist/: the docs' flows and CLI tests run the real
 *   `bin/waymark.mjs`, which loads dist/, and `npm ci` no longer builds it
 *   (the package builds on `prepack`, so a tarball install runs no script of
 *   ours). tsc writes into a scratch dir beside dist/, and only the files
 *   that changed move into dist/, each by a rename: a process loading dist/
 *   meanwhile (a plane of another test run in this tree) never reads a
 *   half-written module, which tsc's in-place writes would give it. (When
 *   sources changed between two runs, such a process may still load a new
 *   module beside an old one for the moment the renames take; an unchanged
 *   build moves nothing. Files whose source was deleted stay, as with tsc.)
 * - finds (or makes) the migrated PGlite data dir's dump that each test
 *   file's PGlite plane starts from (`pgliteTemplate`, a file path; see
 *   test/helpers/pglite-template.ts) instead of migrating its own.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { pgliteTemplateFile } from './helpers/pglite-template.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The path of a migrated PGlite data dir's dump (test/helpers/pglite-template.ts). */
    pgliteTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  // beside dist/, at the same depth, so the source maps' relative paths come out the same
  const scratch = join(root, `.dist-build-${process.pid}`);
  const build = promisify(execFile)(process.execPath, [
    join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    join(root, 'tsconfig.build.json'),
    '--outDir',
    scratch,
  ])
    .then(() => moveChanged(scratch, join(root, 'dist')))
    .catch((e: { stdout?: string; stderr?: string }) => {
      // tsc's diagnostics, as the inherited output of a synchronous run showed them
      process.stdout.write(e.stdout ?? '');
      process.stderr.write(e.stderr ?? '');
      throw e;
    })
    .finally(() => rmSync(scratch, { recursive: true, force: true }));
  const [, template] = await Promise.all([build, pgliteTemplateFile()]);
  project.provide('pgliteTemplate', template);
}

/** Move each file of `from` whose bytes differ from its namesake in `to` (or that `to` lacks) into `to`, by rename. */
function moveChanged(from: string, to: string): void {
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const source = join(entry.parentPath, entry.name);
    const target = join(to, source.slice(from.length + 1));
    const bytes = readFileSync(source);
    if (sameBytes(target, bytes)) continue;
    mkdirSync(dirname(target), { recursive: true });
    // a rename within one file system replaces the target at once (the scratch dir sits beside dist/)
    renameSync(source, target);
  }
}

function sameBytes(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}
