import type { Checkpointer } from '../checkpointer.js';

/** Open the store a CLI flag names: a SQLite path, or a postgres:// URL (with --schema). */
export async function openCliStore(db: string, schema?: string): Promise<Checkpointer> {
  if (/^postgres(ql)?:\/\//.test(db)) {
    const { PostgresCheckpointer } = await import('../postgres/index.js');
    const store = new PostgresCheckpointer({ url: db, schema, max: 2 });
    await store.setup();
    return store;
  }
  const { existsSync } = await import('node:fs');
  if (db !== ':memory:' && !existsSync(db)) throw new Error(`no store at ${db}`);
  const { SqliteCheckpointer } = await import('../sqlite/index.js');
  return new SqliteCheckpointer({ path: db });
}
