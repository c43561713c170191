/**
 * Start the plane: open its database, make sure a first admin key exists,
 * serve HTTP. The main listener bounds how long a request may take to arrive
 * (headers, then body: see body.ts); operator metrics get a listener of
 * their own when a metrics port is configured.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ServerOptions } from 'node:http';
import { serve, type ServerType } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { count } from 'drizzle-orm';
import { createKey, createProject } from './auth.js';
import { ErrorCode, hasCode, WaymarkError } from '../shared/errors.js';
import type { PlaneConfig } from './config.js';
import { isInMemory, openPlaneDatabase, type PlaneDatabase, type PlaneDb } from './db/open.js';
import { projects } from './db/schema.js';
import { createPlaneApp, type PlaneAppOptions } from './app.js';
import { metricsApp } from './metrics.js';
import { scheduleRetention } from './retention.js';
import type { RunningPlaneOf } from './types.js';

export type RunningPlane = RunningPlaneOf<PlaneDb>;

/** Where a plane keeps its admin key, on both backends: `<data dir>/admin-key`, as an absolute path. */
export function adminKeyPath(dataDir: string): string {
  return join(resolve(dataDir), 'admin-key');
}

/**
 * On an empty database: a `local` project and one admin key (scopes admin and
 * operator: it manages every project), written to a 0600 file `admin-key` in
 * the plane's data dir, whichever the backend (never relative to the working
 * directory of whoever started it). An in-memory data dir (`memory://`) has no
 * directory: its key is returned only (it dies with the process anyway).
 */
export async function bootstrap(database: PlaneDatabase, dir: string): Promise<{ key: string; file: string | null } | null> {
  const [{ n }] = await database.db.select({ n: count() }).from(projects);
  if (Number(n) > 0) return null;
  // the project, the key and the key file land together: the file is written inside the
  // transaction, so a crash leaves either nothing (the next start bootstraps again) or a
  // file whose key never committed (the next start finds no project and writes it anew)
  try {
    return await database.db.transaction(async (tx) => {
      await createProject(tx as PlaneDb, 'local');
      const { key } = await createKey(tx as PlaneDb, { project: 'local', name: 'bootstrap admin', scopes: ['admin', 'operator'] });
      if (isInMemory(dir)) return { key, file: null };
      mkdirSync(resolve(dir), { recursive: true });
      const file = adminKeyPath(dir);
      writeFileSync(file, `${key}\n`, { mode: 0o600 });
      chmodSync(file, 0o600);
      return { key, file };
    });
  } catch (e) {
    // another plane on the same Postgres, started at the same moment, made it: its data dir has the key
    if (hasCode(e, ErrorCode.PROJECT_EXISTS)) return null;
    throw e;
  }
}

export async function startPlane(config: Readonly<PlaneConfig>, options: { logger?: Logger; database?: PlaneDatabase; faults?: PlaneAppOptions['faults'] } = {}): Promise<RunningPlane> {
  const database = options.database ?? (await openPlaneDatabase(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir, command: 'waymark plane' }));
  try {
    return await serveOn(config, database, options);
  } catch (e) {
    if (!options.database) await database.close();
    throw e;
  }
}

async function serveOn(config: Readonly<PlaneConfig>, database: PlaneDatabase, options: { logger?: Logger; database?: PlaneDatabase; faults?: PlaneAppOptions['faults'] }): Promise<RunningPlane> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const boot = await bootstrap(database, config.dataDir);
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(config.host);
  if (config.dev && !loopback) throw new Error('--dev (no login) is only allowed when the plane binds to 127.0.0.1');
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
    dev: config.dev && loopback,
  });
  // Node's own limits back the body deadline up for every route (a form post, a claim): headers
  // within headersTimeoutMs, the whole request a little after the body deadline would have fired
  const server = await listen(
    app.fetch,
    config.host,
    config.port,
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.headersTimeoutMs + config.bodyTotalMs + 1000,
      connectionsCheckingInterval: Math.min(1000, config.bodyIdleMs),
    },
    '--port or WAYMARK_PORT',
  );
  const metricsServer =
    config.metricsPort === undefined
      ? null
      : await listen(metricsApp(database.db, metrics).fetch, config.metricsHost, config.metricsPort, {}, '--metrics-port or WAYMARK_METRICS_PORT').catch(async (e: unknown) => {
          await shut(server);
          throw e;
        });
  const port = (server.address() as AddressInfo).port;
  const url = urlOf(config.host, port);
  // `waymark plane keys …` finds the running plane here and goes through it
  database.lock?.setUrl(url);
  const retention = config.retentionDays === undefined ? null : scheduleRetention(database.db, { days: config.retentionDays, everyMs: config.retentionIntervalMs, logger });
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
      if (!options.database) await database.close();
    },
  };
}

const urlOf = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Listen on hostname:port; a port another process holds is PORT_IN_USE (startPlane then closes the database it opened). */
function listen(fetch: (req: Request) => Response | Promise<Response>, hostname: string, port: number, serverOptions: ServerOptions, variable: string): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const s = serve({ fetch, port, hostname, serverOptions }, () => {
      s.off('error', failed);
      resolve(s);
    });
    function failed(e: NodeJS.ErrnoException) {
      if (e.code !== 'EADDRINUSE') return reject(e);
      reject(
        new WaymarkError(ErrorCode.PORT_IN_USE, `port ${port} on ${hostname} is in use (another plane?); choose another with ${variable}, or 0 for a free one`, {
          cause: e,
          details: { host: hostname, port },
        }),
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
