/**
 * The SQLite migration runner: the schema version is `PRAGMA user_version`
 * (as it always was); `waymark_migrations` records each version's name. The
 * list itself is `client/store/migrations.ts`, shared with Postgres.
 */
import type Database from 'better-sqlite3';
import { MIGRATIONS, type Migration } from '../store/migrations.js';

/**
 * Bring the file to the newest version in one immediate transaction: a
 * concurrent opener waits, then finds nothing to do. A file of an older
 * waymark (versions without recorded names) gets its names first; a file of a
 * newer waymark (a version past the list) is left as it is. `list` is for
 * tests of an entry yet to be appended.
 */
export function migrateSqlite(db: Database.Database, list: readonly Migration[] = MIGRATIONS): void {
  if (upToDate(db, list)) return;
  const run = db.transaction(() => {
    db.exec(
      `CREATE TABLE IF NOT EXISTS waymark_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT)`,
    );
    const version = db.pragma('user_version', { simple: true }) as number;
    // applied_at NULL: applied by a waymark that did not record names, when is not known
    const record = db.prepare(`INSERT OR IGNORE INTO waymark_migrations (version, name, applied_at) VALUES (?, ?, ?)`);
    const { n } = db.prepare(`SELECT count(*) AS n FROM waymark_migrations`).get() as { n: number };
    if (n < version) for (let v = 1; v <= Math.min(version, list.length); v++) record.run(v, list[v - 1].name, null);
    for (let v = version; v < list.length; v++) {
      db.exec(list[v].sqlite);
      db.pragma(`user_version = ${v + 1}`);
      record.run(v + 1, list[v].name, new Date().toISOString());
    }
  });
  run.immediate();
}

/**
 * Whether the file needs nothing from `migrateSqlite`: at (or past) the newest
 * version, every version's name recorded. Two reads and no write lock, so the
 * open of an up-to-date file (every open but the first) takes no lock another
 * process could be waiting on; anything else goes to the immediate transaction,
 * which decides again under the lock.
 */
function upToDate(db: Database.Database, list: readonly Migration[]): boolean {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version < list.length) return false;
  const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'waymark_migrations'`).get();
  if (!table) return false;
  const { n } = db.prepare(`SELECT count(*) AS n FROM waymark_migrations`).get() as { n: number };
  return n >= version;
}
