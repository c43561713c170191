/**
 * Start the plane: open its database, make sure a first admin key exists,
 * serve HTTP. The main listener bounds how long a request may take to arrive
 * (headers, then body: see body.ts); operator metrics get a listener of
 * their own when a metrics port is configured.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import { serve, type ServerType } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { count } from 'drizzle-orm';
import { createKey, createProject, keyState } from './auth.js';
import { ErrorCode, hasCode, WaymarkError } from '../shared/errors.js';
import { InvalidOptions, refuse } from '../support/validate.js';
import type { PlaneConfig } from './config.js';
import { lockDataDir, removeMadeDataDir, type DataDirLock } from './db/lock.js';
import { isInMemory, makePrivateDir, openPlaneDatabase, type PlaneDatabase, type PlaneDb } from './db/open.js';
import { projects } from './db/schema.js';
import { createPlaneApp, type PlaneAppOptions } from './app.js';
import { MAX_FEED_WAIT_S } from './http/openapi.js';
import { metricsApp } from './metrics.js';
import { scheduleRetention } from './retention.js';
import type { RunningPlaneOf } from './types.js';

export type RunningPlane = RunningPlaneOf<PlaneDb>;

/** Where a plane keeps its admin key, on both backends: `<data dir>/admin-key`, as an absolute path. */
export function adminKeyPath(dataDir: string): string {
  return join(resolve(dataDir), 'admin-key');
}

/** The database a plane serves, for messages: never a password. */
export function databaseLabel(config: Pick<PlaneConfig, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `the PGlite database in ${resolve(config.dataDir)}`;
  try {
    const u = new URL(config.databaseUrl);
    return `the Postgres database '${decodeURIComponent(u.pathname.slice(1)) || '(default)'}' on ${u.host}`;
  } catch {
    return 'the Postgres database';
  }
}

/**
 * A data dir's admin-key file belongs to the one database whose plane wrote
 * it; the keys commands pair it with the plane holding that dir. A plane
 * therefore never overwrites it, nor starts next to one of another database:
 * the other plane's only copy of its bootstrap key would be lost (or paired
 * with the wrong plane: UNAUTHORIZED), and a file written next to it under
 * another name would still be found by nobody. Refusing, naming the file and
 * the way out, is the one outcome that loses nothing. The code is
 * INVALID_OPTIONS (the data dir given is one this plane cannot use): the
 * registry in shared/errors.ts has no narrower one.
 */
export class ForeignAdminKey extends InvalidOptions {
  constructor(config: Pick<PlaneConfig, 'databaseUrl' | 'dataDir'>, why: string) {
    const file = adminKeyPath(config.dataDir);
    super(
      `the data dir ${resolve(config.dataDir)} has an admin key of another plane database (${file}), ${why}: a data dir belongs to one database and its file is never overwritten. ` +
        `Give this plane a data dir of its own (--data-dir DIR or WAYMARK_PLANE_DIR), or, if that key's database is gone for good, remove ${file} first`,
      { details: { dataDir: resolve(config.dataDir), adminKeyFile: file, database: databaseLabel(config) } },
    );
    this.name = 'ForeignAdminKey';
  }
}

/**
 * On an empty database: a `local` project and one admin key (scopes admin and
 * operator: it manages every project), written to a 0600 file `admin-key` in
 * the plane's data dir, whichever the backend (never relative to the working
 * directory of whoever started it). An in-memory data dir (`memory://`) has no
 * directory: its key is returned only (it dies with the process anyway).
 * An admin-key file already there is never replaced (ForeignAdminKey).
 */
export async function bootstrap(
  database: PlaneDatabase,
  dir: string,
  databaseUrl?: string,
): Promise<{ key: string; file: string | null } | null> {
  const config = { dataDir: dir, databaseUrl };
  const file = isInMemory(dir) ? null : adminKeyPath(dir);
  const [{ n }] = await database.db.select({ n: count() }).from(projects);
  if (Number(n) > 0) {
    // a file whose key id this database never had is another database's (a revoked key of this one is still its own)
    const id =
      file && existsSync(file) ? /^wm_([0-9a-f]{16})_/.exec(readFileSync(file, 'utf8').trim())?.[1] : undefined;
    if (id && (await keyState(database.db, id)) === 'missing')
      throw new ForeignAdminKey(config, `whose key ${databaseLabel(config)} does not have`);
    return null;
  }
  if (file && existsSync(file)) throw new ForeignAdminKey(config, `and ${databaseLabel(config)} is empty`);
  // the key is written to a private file inside the transaction (a disk that refuses it
  // commits nothing) and linked to `admin-key` only once the key has committed: an
  // admin-key file therefore always holds a key its database has, which is what lets an
  // existing one be told apart as another database's; link, not rename, so that nothing
  // written there meanwhile is replaced (the data dir lock already keeps other planes out)
  const pending = file && `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  // the private file is removed unless it holds a committed key that could not be linked (then it is the only copy)
  let keep = false;
  try {
    const key = await database.db.transaction(async (tx) => {
      await createProject(tx as PlaneDb, 'local');
      const { key } = await createKey(tx as PlaneDb, {
        project: 'local',
        name: 'bootstrap admin',
        scopes: ['admin', 'operator'],
      });
      if (pending) {
        mkdirSync(resolve(dir), { recursive: true, mode: 0o700 });
        writeFileSync(pending, `${key}\n`, { mode: 0o600, flag: 'wx' });
        chmodSync(pending, 0o600);
      }
      return key;
    });
    if (!file || !pending) return { key, file: null };
    try {
      linkSync(pending, file);
    } catch (e) {
      keep = true;
      throw new InvalidOptions(
        `the first start's admin key was made but could not be put at ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): it is in ${pending}; move it there (mode 0600)`,
        { details: { adminKeyFile: file, pendingFile: pending }, cause: e },
      );
    }
    return { key, file };
  } catch (e) {
    // another plane on the same Postgres, started at the same moment, made it: its data dir has the key
    if (hasCode(e, ErrorCode.PROJECT_EXISTS)) return null;
    throw e;
  } finally {
    if (pending && !keep) {
      try {
        rmSync(pending, { force: true });
      } catch {
        // its folder could not be made: there is nothing to remove
      }
    }
  }
}

type StartOptions = {
  logger?: Logger;
  database?: PlaneDatabase;
  faults?: PlaneAppOptions['faults'];
  newKeyShownForMs?: PlaneAppOptions['newKeyShownForMs'];
};

export async function startPlane(config: Readonly<PlaneConfig>, options: StartOptions = {}): Promise<RunningPlane> {
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(config.host);
  if (config.dev && !loopback)
    refuse(
      'startPlane',
      [
        `dev: a plane without login is only allowed on a loopback host (127.0.0.1, ::1 or localhost), not '${config.host}'`,
      ],
      'nothing was started',
    );
  const dir = resolve(config.dataDir);
  const onDisk = !isInMemory(config.dataDir) && !options.database;
  // a folder with an admin key and no PGlite database is a Postgres plane's: PGlite would make a database there
  if (onDisk && !config.databaseUrl && existsSync(adminKeyPath(dir)) && !existsSync(join(dir, 'PG_VERSION'))) {
    throw new ForeignAdminKey(config, 'and holds no PGlite database (a Postgres plane wrote it)');
  }
  // A start that never serves leaves no data dir it made (a failed start, PORT_IN_USE, creates
  // no data dir and makes no key): PGlite makes its database before the port is tried, so what
  // this start made is removed again, never a folder that held something before it.
  // DATA_DIR_LOCKED: the folder is another process's, which may be making it right now.
  const fresh = onDisk ? freshDataDir(dir) : null;
  const undo = (e: unknown) => {
    if (fresh && !hasCode(e, ErrorCode.DATA_DIR_LOCKED))
      removeMadeDataDir(dir, fresh.made, 'waymark plane (undoing a failed start)');
  };
  // A Postgres plane holds its data dir's lock as a PGlite plane does: the dir has its
  // admin-key file, and the lock names the plane's URL, through which the keys commands
  // reach it. So one plane per data dir on either backend (several Postgres planes on one
  // database each have their own data dir, or `memory://` for none), and a Postgres plane
  // cannot start on a data dir a running PGlite plane holds.
  let dirLock: DataDirLock | null = null;
  if (onDisk && config.databaseUrl) {
    try {
      makePrivateDir(dir);
      dirLock = lockDataDir(dir, 'waymark plane');
    } catch (e) {
      undo(e);
      if (e instanceof WaymarkError) throw e;
      // a read-only root filesystem (a container), a folder of another user: said as such, with the way out
      throw new InvalidOptions(
        `the plane data dir ${dir} cannot be written (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): a Postgres plane keeps its admin-key file and its lock there; ` +
          'give a writable --data-dir DIR (WAYMARK_PLANE_DIR), or memory:// for none (its first start then shows the admin key once)',
        { details: { dataDir: dir }, cause: e },
      );
    }
  }
  let database: PlaneDatabase | undefined = options.database;
  try {
    database ??= await openPlaneDatabase(
      config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir, command: 'waymark plane' },
    );
    return await serveOn(config, database, dirLock, options);
  } catch (e) {
    if (database && !options.database) await database.close();
    dirLock?.release();
    undo(e);
    throw e;
  }
}

/**
 * What a start on `dir` would make, to be undone if it never serves: the first
 * folder of the path that does not exist (`made`), or, for an empty folder,
 * only what is put in it (`made` undefined); null for a folder with anything
 * in it, which is never touched.
 */
function freshDataDir(dir: string): { made: string | undefined } | null {
  if (existsSync(dir)) {
    try {
      return readdirSync(dir).length === 0 ? { made: undefined } : null;
    } catch {
      return null;
    }
  }
  let made = dir;
  while (dirname(made) !== made && !existsSync(dirname(made))) made = dirname(made);
  return { made };
}

async function serveOn(
  config: Readonly<PlaneConfig>,
  database: PlaneDatabase,
  dirLock: DataDirLock | null,
  options: StartOptions,
): Promise<RunningPlane> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(config.host);
  const { app, metrics } = createPlaneApp({
    database,
    logger,
    maxInflightIngest: config.maxInflightIngest,
    maxQueuedIngest: config.maxQueuedIngest,
    ingestQueueWaitMs: config.ingestQueueWaitMs,
    bodyIdleMs: config.bodyIdleMs,
    bodyTotalMs: config.bodyTotalMs,
    claimReleaseAfterMs: config.claimReleaseAfterMs,
    takeoverAfterMs: config.takeoverAfterMs,
    faults: options.faults,
    newKeyShownForMs: options.newKeyShownForMs,
    dev: config.dev && loopback,
    ...(config.prices ? { prices: config.prices } : {}),
  });
  // Node's own limits back the body deadline up for every route (a form post, a claim): headers
  // within headersTimeoutMs, the whole request a little after the body deadline would have fired.
  // Those end once the request has arrived: a client that then stops reading its answer (a large
  // restore page) would hold its socket and the unsent answer for as long as it likes, so a
  // connection that makes no progress either way is closed after `connectionIdleMs` (while a
  // handler works, or a long poll holds, after longer: `withIdleDeadlines`)
  const server = await listen(
    withIdleDeadlines(app.fetch, config),
    config.host,
    config.port,
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: requestTimeoutMs(config),
      connectionsCheckingInterval: Math.min(1000, config.bodyIdleMs),
    },
    '--port or WAYMARK_PORT',
    connectionIdleMs(config),
  );
  let metricsServer: ServerType | null = null;
  let boot: Awaited<ReturnType<typeof bootstrap>>;
  try {
    metricsServer =
      config.metricsPort === undefined
        ? null
        : await listen(
            metricsApp(database.db, metrics).fetch,
            config.metricsHost,
            config.metricsPort,
            {},
            '--metrics-port or WAYMARK_METRICS_PORT',
          );
    // only once the plane can serve: a start that fails (PORT_IN_USE) bootstraps nothing, so the
    // start that does serve is the first start and says where the key went (until now, no key
    // exists, and a request is simply refused)
    boot = await bootstrap(database, config.dataDir, config.databaseUrl);
  } catch (e) {
    await Promise.all([server, metricsServer].map((s) => s && shut(s)));
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  const url = urlOf(config.host, port);
  // `waymark plane keys …` finds the running plane here and goes through it
  (database.lock ?? dirLock)?.setUrl(url);
  const retention =
    config.retentionDays === undefined
      ? null
      : scheduleRetention(database.db, { days: config.retentionDays, everyMs: config.retentionIntervalMs, logger });
  return {
    url,
    port,
    metricsUrl: metricsServer ? urlOf(config.metricsHost, (metricsServer.address() as AddressInfo).port) : null,
    database,
    adminKeyFile: boot?.file ?? null,
    adminKey: boot?.key ?? null,
    async close() {
      await retention?.stop();
      await Promise.all([server, metricsServer].map((s) => s && shut(s)));
      try {
        if (!options.database) await database.close();
      } finally {
        dirLock?.release();
      }
    },
  };
}

/**
 * How long a connection of the main listener may make no progress at all (no
 * byte read from it or written to it) once its answer is on its way, and
 * between its requests' arrival and their handlers: the longer of Node's
 * request timeout (a request stalled on its way in is answered 408 by the
 * deadline meant for it, never dropped unanswered by this one, whose check
 * runs once a second) and an ingest batch's wait for an admission slot with
 * the headers timeout, plus 5 s. While a handler works the connection gets a
 * longer one (`withIdleDeadlines`). Node tells a stuck write from
 * a slow one at the next tick of the deadline, so a client that stopped
 * reading is let go within twice this. Between requests Node's keep-alive
 * timeout applies, and the next request on the connection gets this back.
 */
export function connectionIdleMs(
  config: Pick<PlaneConfig, 'bodyTotalMs' | 'headersTimeoutMs' | 'ingestQueueWaitMs'>,
): number {
  return Math.max(requestTimeoutMs(config), config.ingestQueueWaitMs + config.headersTimeoutMs) + 5000;
}

/** Node's deadline for a whole request to arrive: a little after the body deadline would have fired. */
function requestTimeoutMs(config: Pick<PlaneConfig, 'bodyTotalMs' | 'headersTimeoutMs'>): number {
  return config.headersTimeoutMs + config.bodyTotalMs + 1000;
}

/** What a handler may spend without a byte either way (a slow query, a restore page built) before its connection is closed. */
const HANDLER_IDLE_MS = 30_000;
/** The long polls: a `wait=N` there holds the request for up to N seconds, idle by design. */
const FEED_PATHS = new Set(['/v1/changes', '/v1/writer-changes', '/v1/decisions', '/v1/writer-decisions']);

/**
 * The app's fetch, with a connection's idle deadline per phase: while the
 * handler works, `connectionIdleMs` but at least HANDLER_IDLE_MS (a long
 * poll: its hold, at most MAX_FEED_WAIT_S, if longer), each with 5 s and the
 * headers timeout on top; once the answer is on its way, `connectionIdleMs`,
 * so a client that stops reading it is let go sooner than a slow handler.
 * The query is read without parsing the URL, which a hostile Host can make
 * unparseable (the app answers that request as usual).
 */
function withIdleDeadlines(
  fetch: (request: Request, env?: { incoming?: IncomingMessage }) => Response | Promise<Response>,
  config: Pick<PlaneConfig, 'bodyTotalMs' | 'headersTimeoutMs' | 'ingestQueueWaitMs'>,
): (request: Request, env?: { incoming?: IncomingMessage }) => Response | Promise<Response> {
  const idleMs = connectionIdleMs(config);
  const handlerMs = Math.max(idleMs, HANDLER_IDLE_MS + 5000 + config.headersTimeoutMs);
  return async (request, env) => {
    const socket = env?.incoming?.socket;
    if (!socket) return fetch(request, env);
    socket.setTimeout(Math.max(handlerMs, feedHoldMs(request.url) + 5000 + config.headersTimeoutMs));
    try {
      return await fetch(request, env);
    } finally {
      socket.setTimeout(idleMs);
    }
  };
}

/** A long poll's hold in ms (its `wait`, at most MAX_FEED_WAIT_S); 0 for any other request. A `wait` the route refuses is answered 400 at once. */
function feedHoldMs(url: string): number {
  const query = url.indexOf('?');
  if (query < 0) return 0;
  const scheme = url.indexOf('//');
  const pathStart = url.indexOf('/', scheme < 0 ? 0 : scheme + 2);
  if (pathStart < 0 || pathStart > query || !FEED_PATHS.has(url.slice(pathStart, query))) return 0;
  const wait = Number(new URLSearchParams(url.slice(query + 1)).get('wait'));
  return Number.isFinite(wait) && wait > 0 ? Math.min(wait, MAX_FEED_WAIT_S) * 1000 : 0;
}

const urlOf = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Listen on hostname:port; a port another process holds is PORT_IN_USE (startPlane then closes the database it opened). */
function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  hostname: string,
  port: number,
  serverOptions: ServerOptions,
  variable: string,
  idleMs = 0,
): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const s = serve({ fetch, port, hostname, serverOptions }, () => {
      s.off('error', failed);
      resolve(s);
    });
    // before the first connection can arrive (the listener accepts none until this tick ends); a timed-out
    // socket is destroyed, as nothing else listens for 'timeout', and its handler's late answer goes nowhere
    if (idleMs > 0) (s as Server).setTimeout(idleMs);
    function failed(e: NodeJS.ErrnoException) {
      if (e.code !== 'EADDRINUSE') return reject(e);
      reject(
        new WaymarkError(
          ErrorCode.PORT_IN_USE,
          `port ${port} on ${hostname} is in use (another plane?); choose another with ${variable}, or 0 for a free one`,
          {
            cause: e,
            details: { host: hostname, port },
          },
        ),
      );
    }
    s.once('error', failed);
  });
}

function shut(server: ServerType): Promise<void> {
  return new Promise<void>((resolve) => {
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    server.close(() => resolve());
  });
}
