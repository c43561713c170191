/**
 * Open a store from a spec string, so a child process can open the same store
 * as its parent: `sqlite:/path/to/file.db` or `postgres:<url>#<schema>`.
 */
import type { Checkpointer, FaultHook } from '../../client/index.js';

export async function openStore(spec: string, faults?: FaultHook): Promise<Checkpointer> {
  if (spec.startsWith('sqlite:')) {
    const { SqliteCheckpointer } = await import('../../client/sqlite/index.js');
    return new SqliteCheckpointer({ path: spec.slice('sqlite:'.length), faults });
  }
  if (spec.startsWith('postgres:')) {
    const { PostgresCheckpointer } = await import('../../client/postgres/index.js');
    const rest = spec.slice('postgres:'.length);
    const hash = rest.lastIndexOf('#');
    const url = hash >= 0 ? rest.slice(0, hash) : rest;
    const schema = hash >= 0 ? rest.slice(hash + 1) : 'waymark';
    const store = new PostgresCheckpointer({ url, schema, max: 4, faults });
    await store.setup();
    return store;
  }
  throw new Error(`unknown store spec: ${spec}`);
}
