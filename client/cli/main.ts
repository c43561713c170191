/**
 * The `waymark` command line.
 *
 *   waymark runs --db PATH|URL [--schema S]
 *   waymark inspect --db PATH|URL [--schema S] [EXECUTION_ID]
 *   waymark sync status --db PATH
 *   waymark sync now --db PATH --plane URL [--key K] [--timeout SECONDS]
 *   waymark restore EXECUTION_ID --db PATH --plane URL [--key K]
 *   waymark quarantine --db PATH
 * The key may come from WAYMARK_API_KEY.
 */
import { parseArgs } from 'node:util';
import { openCliStore } from './open.js';
import { inspectRun, listRuns } from './store-commands.js';
import { quarantineList, restoreCommand, syncNow, syncStatus } from './sync-commands.js';

const USAGE = `usage:
  waymark runs --db PATH|URL [--schema S]             list executions and their state
  waymark inspect --db PATH|URL [--schema S] [ID]     a run's rows, pending interrupt, idempotency entries
  waymark sync status --db PATH                       backlog, quarantine, last ack and last error
  waymark sync now --db PATH --plane URL [--key K]    drain the backlog now, with progress
  waymark restore ID --db PATH --plane URL [--key K]  pull a run from the plane, with progress
  waymark quarantine --db PATH                        rows refused, with reasons
  (the key may come from WAYMARK_API_KEY)`;

/** Restore may target a store that does not exist yet (a machine that never ran the run). */
async function openOrCreate(db: string, schema?: string) {
  if (/^postgres(ql)?:\/\//.test(db)) return openCliStore(db, schema);
  const { SqliteCheckpointer } = await import('../sqlite/index.js');
  return new SqliteCheckpointer({ path: db });
}

export async function main(argv: string[], out: (l: string) => void = console.log): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') {
    out(USAGE);
    return command ? 0 : 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: { db: { type: 'string' }, schema: { type: 'string' }, plane: { type: 'string' }, key: { type: 'string' }, timeout: { type: 'string' } },
    allowPositionals: true,
  });
  if (command === 'runs' || command === 'inspect') {
    if (!values.db) {
      out(`--db is required\n${USAGE}`);
      return 2;
    }
    const store = await openCliStore(values.db, values.schema);
    try {
      if (command === 'runs' || !positionals[0]) {
        await listRuns(store, out);
        return 0;
      }
      return (await inspectRun(store, positionals[0], out)) ? 0 : 1;
    } finally {
      await store.close();
    }
  }
  if (command === 'sync' || command === 'restore' || command === 'quarantine') {
    if (!values.db) {
      out(`--db is required\n${USAGE}`);
      return 2;
    }
    const apiKey = values.key ?? process.env.WAYMARK_API_KEY;
    const needsPlane = command === 'restore' || (command === 'sync' && positionals[0] === 'now');
    if (needsPlane && (!values.plane || !apiKey)) {
      out(`--plane and --key (or WAYMARK_API_KEY) are required\n${USAGE}`);
      return 2;
    }
    if (command === 'restore' && !positionals[0]) {
      out(`restore needs an execution id\n${USAGE}`);
      return 2;
    }
    const store = command === 'restore' ? await openOrCreate(values.db, values.schema) : await openCliStore(values.db, values.schema);
    try {
      if (command === 'quarantine') {
        await quarantineList(store, out);
        return 0;
      }
      if (command === 'restore') {
        await restoreCommand(store, positionals[0], { url: values.plane!, apiKey: apiKey! }, out);
        return 0;
      }
      if (positionals[0] === 'now') {
        return (await syncNow(store, { url: values.plane!, apiKey: apiKey!, timeoutMs: Number(values.timeout ?? 60) * 1000 }, out)) ? 0 : 1;
      }
      await syncStatus(store, out);
      return 0;
    } finally {
      await store.close();
    }
  }
  out(`unknown command '${command}'\n${USAGE}`);
  return 2;
}
