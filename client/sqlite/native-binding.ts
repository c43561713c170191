/**
 * Where better-sqlite3's compiled addon is, found once per process. Given to
 * `new Database` as `nativeBinding`, it spares the first open the `bindings`
 * package's search (it stats a dozen candidate paths from a stack trace:
 * 3–4 ms of a fresh process's first open, measured). A build laid out
 * elsewhere (a debug build, a bundler) is not found here, and better-sqlite3
 * searches as it always does.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

let found: { path: string | undefined } | undefined;

export function nativeBinding(): string | undefined {
  if (!found) {
    let path: string | undefined;
    try {
      path = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
    } catch {
      path = undefined;
    }
    found = { path: path && existsSync(path) ? path : undefined };
  }
  return found.path;
}
