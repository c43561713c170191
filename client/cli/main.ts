/**
 * The `waymark` command line.
 *
 *   waymark runs --db PATH|URL [--schema S]
 *   waymark inspect --db PATH|URL [--schema S] [EXECUTION_ID]
 */
import { parseArgs } from 'node:util';
import { openCliStore } from './open.js';
import { inspectRun, listRuns } from './store-commands.js';

const USAGE = `usage:
  waymark runs --db PATH|URL [--schema S]             list executions and their state
  waymark inspect --db PATH|URL [--schema S] [ID]     a run's rows, pending interrupt, idempotency entries`;

export async function main(argv: string[], out: (l: string) => void = console.log): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') {
    out(USAGE);
    return command ? 0 : 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: { db: { type: 'string' }, schema: { type: 'string' } },
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
  out(`unknown command '${command}'\n${USAGE}`);
  return 2;
}
