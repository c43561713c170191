/**
 * `waymark ui`: the inspector over a local store, until Ctrl-C. The store is
 * `--db` (a SQLite file or any store spec, as every command takes it) or
 * `--url` (a Postgres URL), never both. It binds to 127.0.0.1 on a fixed port
 * (4610, next to the plane's 4600, so the address can be bookmarked; `--port 0`
 * picks a free one) and refuses a non-loopback `--host` unless
 * `--allow-remote` is given: the local inspector has no login. Approvals made
 * in it are recorded under `--user` (default: the OS user name). `--prices FILE` (support/prices.ts) adds each
 * run's cost to the run list and the run pages; a file with problems is refused with them all named.
 */
import type { Parsed, OptionSpec } from '../../support/cli-args.js';
import { readPricesFile, type Prices } from '../../support/prices.js';
import { portTextProblem } from '../../support/validate.js';
import { openStore, redactUrl } from '../open-store.js';
import { isLoopback } from '../ui/loopback.js';
import { onStopRequest } from '../../support/launcher.js';
import { requirePeers, UI_PEERS } from '../../support/peer.js';

type Out = (line: string) => void;

/** The prices file checkUi read and found good, by the parsed command line it read it for: runUi serves these, not a second read. */
const checkedPrices = new WeakMap<Parsed, Readonly<Prices>>();

export const UI_DEFAULT_PORT = 4610;

export const UI_OPTIONS: Record<string, OptionSpec> = {
  db: { type: 'string', help: 'the store: a SQLite file (or any store spec: sqlite:<path>, postgres://…)' },
  url: { type: 'string', help: 'a Postgres store: its postgres:// URL (instead of --db)' },
  schema: { type: 'string', help: 'Postgres schema of the store (default: waymark)' },
  host: { type: 'string', help: 'the interface to listen on (default: 127.0.0.1; another needs --allow-remote)' },
  port: { type: 'string', help: `the port to listen on (default: ${UI_DEFAULT_PORT}; 0 picks a free one)` },
  user: { type: 'string', help: 'the name approvals made in this UI are recorded under (default: the OS user name)' },
  prices: {
    type: 'string',
    help: "a JSON file of model prices per million tokens: the run list and run pages show each run's cost",
  },
  'allow-remote': {
    type: 'boolean',
    help: 'allow a non-loopback --host: anyone who reaches it reads the store and can answer its pauses, with no login',
  },
};

/** Every problem of a `waymark ui` command line (the store options are its own, so main's --db rule does not apply). */
export function checkUi(p: Parsed): string[] {
  const problems: string[] = [];
  const { db, url, host, port } = p.values;
  if (db === undefined && url === undefined)
    problems.push('a store is required: --db FILE (a SQLite file) or --url postgres://…');
  if (db !== undefined && url !== undefined) problems.push('give --db or --url, not both');
  if (typeof url === 'string' && url !== '' && !/^postgres(ql)?:\/\//.test(url))
    problems.push(`option '--url' must be a postgres:// URL (got '${url}'); a SQLite file is --db`);
  const portProblem = typeof port === 'string' && port !== '' ? portTextProblem("option '--port'", port) : null;
  if (portProblem) problems.push(portProblem);
  if (typeof p.values.prices === 'string') {
    const read = readPricesFile(p.values.prices);
    if ('problems' in read) problems.push(...read.problems);
    else checkedPrices.set(p, read.prices);
  }
  if (typeof host === 'string' && host !== '' && !isLoopback(host) && p.values['allow-remote'] !== true) {
    problems.push(
      `host '${host}' is not a loopback address: the local inspector has no login, so anyone who reaches it would read the store; pass --allow-remote to bind there anyway`,
    );
  }
  return problems;
}

/** Open the store, serve, print where; resolves (0) on SIGINT or SIGTERM, once closed. */
export async function runUi(p: Parsed, out: Out, err: Out): Promise<number> {
  // hono and its node server are optional peers of waymark (the plane's, and this page's): checked before the
  // store opens, a missing one says what to install (ui/serve.js imports them statically)
  await requirePeers('waymark ui', UI_PEERS);
  const spec = String(p.values.url ?? p.values.db);
  const store = await openStore(spec, { schema: p.values.schema as string | undefined, max: 4, mustExist: true });
  try {
    const { serveLocalUi } = await import('../ui/serve.js');
    const { osUser } = await import('../runtime/decide.js');
    const user = (p.values.user as string | undefined) || osUser();
    const port = p.values.port !== undefined ? Number(p.values.port) : UI_DEFAULT_PORT;
    let ui: Awaited<ReturnType<typeof serveLocalUi>>;
    try {
      ui = await serveLocalUi(store, {
        host: p.values.host as string | undefined,
        port,
        allowRemote: p.values['allow-remote'] === true,
        label: redactUrl(spec),
        user,
        ...(checkedPrices.has(p) ? { prices: checkedPrices.get(p) } : {}),
      });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        err(
          `waymark ui: PORT_IN_USE: port ${port} is in use (another waymark ui?); pass --port with another port, or --port 0 for a free one`,
        );
        return 1;
      }
      throw e;
    }
    // listened for before the first line: a supervisor may stop it as soon as it says where it listens
    const stopAsked = new Promise<void>((resolve) => onStopRequest(resolve));
    out(`waymark ui: ${redactUrl(spec)} (writer ${store.writerId})`);
    out(
      `listening on ${ui.url}/ (reads, and records approvals as '${user}'; no login${p.values['allow-remote'] === true ? '; REMOTE ACCESS ALLOWED: anyone who reaches it reads this store and can answer its pauses' : ''}); Ctrl-C stops it`,
    );
    await stopAsked;
    await ui.close();
    return 0;
  } finally {
    await store.close();
  }
}
