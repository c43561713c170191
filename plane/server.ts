/** Start the plane: open its database, make sure a first admin key exists, serve HTTP. */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { count } from 'drizzle-orm';
import { createKey } from './auth.js';
import type { PlaneConfig } from './config.js';
import { isInMemory, openPlaneDatabase, type PlaneDatabase } from './db/open.js';
import { projects } from './db/schema.js';
import { createPlaneApp, type PlaneAppOptions } from './app.js';

export interface RunningPlane {
  url: string;
  port: number;
  database: PlaneDatabase;
  /** Set on the first start of an empty database: where the admin key was written. */
  adminKeyFile: string | null;
  adminKey: string | null;
  close(): Promise<void>;
}

/**
 * On an empty database: a `local` project and one admin key, written to a 0600
 * file in `dir`. An in-memory database (`memory://`) has no directory: its key
 * is returned only (it dies with the process anyway).
 */
export async function bootstrap(database: PlaneDatabase, dir: string): Promise<{ key: string; file: string | null } | null> {
  const [{ n }] = await database.db.select({ n: count() }).from(projects);
  if (Number(n) > 0) return null;
  const { key } = await createKey(database.db, { project: 'local', name: 'bootstrap admin', scopes: ['admin'] });
  if (isInMemory(dir)) return { key, file: null };
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'admin-key');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { key, file };
}

export async function startPlane(
  config: Readonly<PlaneConfig>,
  options: { logger?: Logger; database?: PlaneDatabase; faults?: PlaneAppOptions['faults'] } = {},
): Promise<RunningPlane> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const database =
    options.database ??
    (await openPlaneDatabase(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir }));
  const boot = await bootstrap(database, config.databaseUrl ? '.waymark' : config.dataDir);
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(config.host);
  if (config.dev && !loopback) throw new Error('--dev (no login) is only allowed when the plane binds to 127.0.0.1');
  const { app } = createPlaneApp({ database, logger, maxInflightIngest: config.maxInflightIngest, maxQueuedIngest: config.maxQueuedIngest, ingestQueueWaitMs: config.ingestQueueWaitMs, claimReleaseAfterMs: config.claimReleaseAfterMs, faults: options.faults, dev: config.dev && loopback });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  return {
    url,
    port,
    database,
    adminKeyFile: boot?.file ?? null,
    adminKey: boot?.key ?? null,
    async close() {
      await new Promise<void>((resolve) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      });
      if (!options.database) await database.close();
    },
  };
}
