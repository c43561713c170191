/**
 * The SQLite driver, better-sqlite3, and where its compiled addon is.
 *
 * The driver is a CommonJS package, loaded here with `require`: an `import`
 * of it has Node read and scan its sources for their export names before
 * running them, 5–10 ms of a fresh process's first import of `waymark/sqlite`
 * (measured), which `require` does not pay. Missing, it throws MISSING_PEER
 * when `waymark/sqlite` is imported, naming the command that installs it.
 *
 * The addon is found once per process and given to `new Database` as
 * `nativeBinding`: it spares the first open the `bindings` package's search
 * (it stats a dozen candidate paths from a stack trace: 3–4 ms of a fresh
 * process's first open, measured). A build laid out elsewhere (a debug build,
 * a bundler) is not found here, and better-sqlite3 searches as it always does.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import { requirePeer } from '../../support/peer.js';

const BetterSqlite3 = requirePeer<typeof Database>('waymark/sqlite', 'better-sqlite3');

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

/** A connection to the file at `path` (or `:memory:`), with the addon found above. */
export function openDatabase(path: string): Database.Database {
  const addon = nativeBinding();
  return new BetterSqlite3(path, addon ? { nativeBinding: addon } : {});
}
