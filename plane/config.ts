/**
 * The plane's configuration: read from the environment here and nowhere else,
 * validated once, frozen.
 */
import { z } from 'zod';

const Env = z.object({
  WAYMARK_DATABASE_URL: z.string().url().optional(),
  WAYMARK_PLANE_DIR: z.string().default('.waymark/plane'),
  WAYMARK_HOST: z.string().default('127.0.0.1'),
  WAYMARK_PORT: z.coerce.number().int().min(0).max(65535).default(4600),
  WAYMARK_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WAYMARK_MAX_INFLIGHT_INGEST: z.coerce.number().int().positive().default(16),
  WAYMARK_MAX_QUEUED_INGEST: z.coerce.number().int().nonnegative().default(64),
  WAYMARK_INGEST_QUEUE_WAIT_MS: z.coerce.number().int().positive().default(10_000),
  WAYMARK_BODY_IDLE_MS: z.coerce.number().int().positive().default(10_000),
  WAYMARK_BODY_TOTAL_MS: z.coerce.number().int().positive().default(120_000),
  WAYMARK_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  WAYMARK_METRICS_HOST: z.string().default('127.0.0.1'),
  WAYMARK_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  WAYMARK_CLAIM_RELEASE_AFTER_MS: z.coerce.number().int().nonnegative().default(3_600_000),
  WAYMARK_RETENTION_DAYS: z.coerce.number().positive().optional(),
  WAYMARK_RETENTION_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  WAYMARK_TAKEOVER_AFTER_MS: z.coerce.number().int().positive().default(60_000),
  WAYMARK_DEV: z.enum(['0', '1', 'true', 'false']).optional(),
});

export interface PlaneConfig {
  /** Postgres URL; absent means embedded PGlite in `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
  host: string;
  port: number;
  logLevel: z.infer<typeof Env>['WAYMARK_LOG_LEVEL'];
  /** Concurrent ingest requests before the plane answers 429. */
  maxInflightIngest: number;
  maxQueuedIngest: number;
  ingestQueueWaitMs: number;
  /** A request body without a byte for this long is answered 408 and its connection closed. */
  bodyIdleMs: number;
  /** A request body not complete after this long is answered 408 and its connection closed. */
  bodyTotalMs: number;
  /** Request headers must arrive within this (the server closes the connection otherwise). */
  headersTimeoutMs: number;
  /** Operator metrics listener (Prometheus `/metrics`); absent means not served. Never on the main listener. */
  metricsHost: string;
  metricsPort?: number;
  /** A claim held but never applied by its holder may be taken over after this long; 0: never. */
  claimReleaseAfterMs: number;
  /** Finished runs not updated for this many days are pruned on a schedule; absent: never. */
  retentionDays?: number;
  /** How often the retention prune runs (the first run is at start). */
  retentionIntervalMs: number;
  /**
   * A run that is not paused may be taken over by another writer once its
   * writer has not been heard from (an event of that run) for this long, by
   * the plane's clock. Keep it above the fleet's longest lease. Default 60 s.
   */
  takeoverAfterMs: number;
  /** Inspector without login (only honoured when bound to loopback). */
  dev: boolean;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<PlaneConfig> = {}): Readonly<PlaneConfig> {
  const r = Env.safeParse(env);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new Error(`invalid plane configuration: ${i.path.join('.')}: ${i.message}`);
  }
  const e = r.data;
  return Object.freeze({
    databaseUrl: e.WAYMARK_DATABASE_URL,
    dataDir: e.WAYMARK_PLANE_DIR,
    host: e.WAYMARK_HOST,
    port: e.WAYMARK_PORT,
    logLevel: e.WAYMARK_LOG_LEVEL,
    maxInflightIngest: e.WAYMARK_MAX_INFLIGHT_INGEST,
    maxQueuedIngest: e.WAYMARK_MAX_QUEUED_INGEST,
    ingestQueueWaitMs: e.WAYMARK_INGEST_QUEUE_WAIT_MS,
    bodyIdleMs: e.WAYMARK_BODY_IDLE_MS,
    bodyTotalMs: e.WAYMARK_BODY_TOTAL_MS,
    headersTimeoutMs: e.WAYMARK_HEADERS_TIMEOUT_MS,
    metricsHost: e.WAYMARK_METRICS_HOST,
    metricsPort: e.WAYMARK_METRICS_PORT,
    claimReleaseAfterMs: e.WAYMARK_CLAIM_RELEASE_AFTER_MS,
    retentionDays: e.WAYMARK_RETENTION_DAYS,
    retentionIntervalMs: e.WAYMARK_RETENTION_INTERVAL_MS,
    takeoverAfterMs: e.WAYMARK_TAKEOVER_AFTER_MS,
    dev: e.WAYMARK_DEV === '1' || e.WAYMARK_DEV === 'true',
    ...overrides,
  });
}
