/**
 * Builds dist/ once per test run: the README flows and CLI tests run the real
 * `bin/waymark.mjs`, which loads dist/, and `npm ci` no longer builds it (the
 * package builds on `prepack`, so a tarball install runs no script of ours).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
}
