/**
 * Once per test run, side by side:
 * - builds dist/: the README flows and CLI tests run the real
 *   `bin/waymark.mjs`, which loads dist/, and `npm ci` no longer builds it
 *   (the package builds on `prepack`, so a tarball install runs no script of
 *   ours);
 * - finds (or makes) the migrated PGlite data dir's dump that each test
 *   file's PGlite plane starts from (`pgliteTemplate`, a file path; see
 *   test/helpers/pglite-template.ts) instead of migrating its own.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
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
  const build = promisify(execFile)(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')]).catch((e: { stdout?: string; stderr?: string }) => {
    // tsc's diagnostics, as the inherited output of a synchronous run showed them
    process.stdout.write(e.stdout ?? '');
    process.stderr.write(e.stderr ?? '');
    throw e;
  });
  const [, template] = await Promise.all([build, pgliteTemplateFile()]);
  project.provide('pgliteTemplate', template);
}
