/**
 * The plane's configuration: read from the environment here and nowhere else,
 * validated once, frozen. A bad setting is INVALID_OPTIONS naming every bad
 * setting at once (`details.problems`), each with what is wanted and what
 * was given; nothing is opened or started.
 */
import { z } from 'zod';
import { integerTextWanted, oneOfWanted, refusal, shown } from '../support/validate.js';
import { type Prices, resolvePrices } from '../support/prices.js';

/** One setting given as text, checked by the kit's `wanted` (its problem without the setting's name, which parseEnv puts first). */
function setting<T>(wanted: (text: string) => string | null, parse: (text: string) => T) {
  return z
    .string()
    .check((ctx) => {
      const problem = wanted(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    })
    .transform(parse);
}

/** A whole number from `least` to `most`, in decimal digits (`1e3` or ` 16` is a typo, not a number). */
const integer = (least: number, most?: number, unit?: string) =>
  setting((text) => integerTextWanted(text, least, most, unit), Number);

/** The longest duration a setting may give: past it Node's timers fire at once (a retention pass every millisecond). */
const MAX_TIMER_MS = 2_147_483_647;
const port = () => integer(0, 65535);
const durationMs = () => integer(1, MAX_TIMER_MS, 'ms');
const positive = () => integer(1);
const nonNegative = () => integer(0);
const text = () => z.string().min(1, { error: 'must not be empty' });
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  setting(
    (text) => oneOfWanted(text, values),
    (text) => text as T[number],
  );

/** Every setting the plane reads from the environment; a bad one is refused naming what is wanted and what was given. */
const Env = z.object({
  // never echoed: a database URL may hold a password
  // by its scheme only: postgres.js also takes URLs a URL parser refuses (several hosts: postgres://h1:5432,h2:5432/db)
  WAYMARK_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/i, {
      error:
        'must be a postgres:// or postgresql:// URL such as postgres://user:password@host:5432/db (the value is not shown: it may hold a password)',
    })
    .optional(),
  WAYMARK_PLANE_DIR: text().default('.waymark/plane'),
  WAYMARK_HOST: text().default('127.0.0.1'),
  WAYMARK_PORT: port().default(4600),
  WAYMARK_LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WAYMARK_MAX_INFLIGHT_INGEST: positive().default(16),
  WAYMARK_MAX_QUEUED_INGEST: nonNegative().default(64),
  WAYMARK_INGEST_QUEUE_WAIT_MS: durationMs().default(10_000),
  WAYMARK_BODY_IDLE_MS: durationMs().default(10_000),
  WAYMARK_BODY_TOTAL_MS: durationMs().default(120_000),
  WAYMARK_HEADERS_TIMEOUT_MS: durationMs().default(10_000),
  WAYMARK_METRICS_HOST: text().default('127.0.0.1'),
  WAYMARK_METRICS_PORT: port().optional(),
  // 0: never
  WAYMARK_CLAIM_RELEASE_AFTER_MS: integer(0, MAX_TIMER_MS, 'ms').default(3_600_000),
  WAYMARK_RETENTION_DAYS: setting(
    (text) =>
      /^\d+(\.\d+)?$/.test(text) && Number(text) > 0 ? null : `must be a positive number of days (got ${shown(text)})`,
    Number,
  ).optional(),
  WAYMARK_RETENTION_INTERVAL_MS: durationMs().default(3_600_000),
  WAYMARK_TAKEOVER_AFTER_MS: durationMs().default(60_000),
  WAYMARK_DEV: oneOf(['0', '1', 'true', 'false']).optional(),
});

/**
 * The plane's settings, as `loadConfig` resolves them from the environment (each from a `WAYMARK_*` variable, with
 * its default) and from overrides such as command-line flags; what `startPlane` takes.
 */
export interface PlaneConfig {
  /** Postgres URL; absent means embedded PGlite in `dataDir`. */
  databaseUrl?: string;
  /** The PGlite data folder when no `databaseUrl` is given (`WAYMARK_PLANE_DIR`). Default `.waymark/plane`. */
  dataDir: string;
  /** The address the HTTP server binds to (`WAYMARK_HOST`). Default `127.0.0.1`. */
  host: string;
  /** The HTTP server's port (`WAYMARK_PORT`); 0 picks a free one. Default 4600. */
  port: number;
  /** The pino log level (`WAYMARK_LOG_LEVEL`): fatal, error, warn, info, debug, trace or silent. Default `info`. */
  logLevel: z.infer<typeof Env>['WAYMARK_LOG_LEVEL'];
  /** Concurrent ingest requests before the plane answers 429. */
  maxInflightIngest: number;
  /** Ingest requests that may wait for a slot before the plane answers 429 (`WAYMARK_MAX_QUEUED_INGEST`). Default 64. */
  maxQueuedIngest: number;
  /** How long an ingest request may wait for a slot before it is answered 429, in ms (`WAYMARK_INGEST_QUEUE_WAIT_MS`). Default 10 000. */
  ingestQueueWaitMs: number;
  /** A request body without a byte for this long is answered 408 and its connection closed. */
  bodyIdleMs: number;
  /** A request body not complete after this long is answered 408 and its connection closed. */
  bodyTotalMs: number;
  /** Request headers must arrive within this (the server closes the connection otherwise). */
  headersTimeoutMs: number;
  /** Operator metrics listener (Prometheus `/metrics`); absent means not served. Never on the main listener. */
  metricsHost: string;
  /** The port of the operator metrics listener (`WAYMARK_METRICS_PORT`); absent: metrics are not served. */
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
  /**
   * Model prices per million tokens (`--prices FILE`; support/prices.ts): the inspector shows each run's cost.
   * Absent: no cost is shown. Checked by `loadConfig`, every problem named.
   */
  prices?: Prices;
}

/** The variable each setting a command-line flag can give is read from: a flag given replaces its variable, which is then not read. */
const FLAG_VARIABLES = {
  databaseUrl: 'WAYMARK_DATABASE_URL',
  dataDir: 'WAYMARK_PLANE_DIR',
  host: 'WAYMARK_HOST',
  port: 'WAYMARK_PORT',
  metricsPort: 'WAYMARK_METRICS_PORT',
  dev: 'WAYMARK_DEV',
} as const satisfies Partial<Record<keyof PlaneConfig, keyof z.input<typeof Env>>>;

/** The environment without the variables of the settings `replaced` names (flags given on the command line). */
function withoutReplaced(env: NodeJS.ProcessEnv, replaced: Iterable<string>): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const key of replaced) if (key in FLAG_VARIABLES) delete out[FLAG_VARIABLES[key as keyof typeof FLAG_VARIABLES]];
  return out;
}

/** The environment's settings, or every problem of them, each `VARIABLE: must be … (got …)`; the variables of the settings in `replaced` are not read. */
function parseEnv(
  env: NodeJS.ProcessEnv,
  replaced: Iterable<string>,
): { data: z.output<typeof Env>; problems?: undefined } | { problems: string[] } {
  const r = Env.safeParse(withoutReplaced(env, replaced));
  // each issue is one setting's (its checks share one message), named by its variable
  return r.success
    ? { data: r.data }
    : { problems: r.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`) };
}

/** What is wrong with a database URL given as --database-url (the value not shown: it may hold a password); null when it is a Postgres URL. */
export function databaseUrlProblem(url: string): string | null {
  return Env.shape.WAYMARK_DATABASE_URL.safeParse(url).success
    ? null
    : "option '--database-url' must be a postgres:// or postgresql:// URL such as postgres://user:password@host:5432/db (the value is not shown: it may hold a password)";
}

/** Every problem of the environment's settings (empty when it is good); those of the settings in `replaced` are not read. */
export function configProblems(env: NodeJS.ProcessEnv = process.env, replaced: Iterable<string> = []): string[] {
  return parseEnv(env, replaced).problems ?? [];
}

/**
 * The configuration: the environment's settings, then `overrides` in place of
 * theirs. The variable of a setting a command-line flag can give
 * (FLAG_VARIABLES) is not read when `overrides` gives that setting; the rest
 * of the environment is checked whole.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<PlaneConfig> = {},
): Readonly<PlaneConfig> {
  const r = parseEnv(env, Object.keys(overrides));
  const prices = overrides.prices !== undefined ? resolvePrices(overrides.prices) : null;
  const problems = [...(r.problems ?? []), ...(prices && 'problems' in prices ? prices.problems : [])];
  if (r.problems || problems.length) throw refusal('invalid plane configuration', problems);
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
    ...(prices && 'prices' in prices ? { prices: prices.prices } : {}),
  });
}
