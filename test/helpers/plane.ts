/// <reference lib="dom" />
/**
 * Real planes for tests: over HTTP on 127.0.0.1 (port 0), on PGlite started
 * from a migrated dump (fast), or on a real Postgres database.
 */
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
// the plane's own modules (their full types), not the public waymark/plane facade whose database handle is opaque
import { createKey, type Scope } from '../../plane/auth.js';
import { openPlaneDatabase, type PlaneDatabase, type StatementTrace } from '../../plane/db/open.js';
import { makePgliteTemplate } from './pglite-template.js';
import { startPlane } from '../../plane/server.js';
import { loadConfig, type PlaneConfig } from '../../plane/config.js';
import type { PlaneAppOptions } from '../../plane/app.js';

let template: Promise<Blob> | null = null;

/**
 * The migrated PGlite data dir every plane of this process starts from: the
 * file test/global-setup.ts provides as `pgliteTemplate`
 * (test/helpers/pglite-template.ts), else one made here, once per process
 * (outside vitest: the soak).
 */
function pgliteTemplate(): Promise<Blob> {
  template ??= (async () => {
    if (process.env.VITEST) {
      const { inject } = await import('vitest');
      const file = inject('pgliteTemplate');
      // gone meanwhile (a temp-dir sweep): made here instead
      if (file) return readFile(file).then((b) => new Blob([b]), makePgliteTemplate);
    }
    return makePgliteTemplate();
  })();
  return template;
}

export async function openTestPlaneDatabase(
  kind: 'pglite' | { url: string },
  trace?: StatementTrace,
): Promise<PlaneDatabase> {
  if (kind === 'pglite') return openPlaneDatabase({ dataDir: 'memory://', loadDataDir: await pgliteTemplate() }, trace);
  return openPlaneDatabase({ databaseUrl: kind.url, max: 8 }, trace);
}

export interface TestPlane {
  url: string;
  /** The operator metrics listener's URL (`/metrics`), when started with `metricsPort`. */
  metricsUrl: string | null;
  database: PlaneDatabase;
  key(project: string, scopes: Scope[]): Promise<string>;
  close(): Promise<void>;
}

export async function startTestPlane(
  kind: 'pglite' | { url: string },
  o: {
    faults?: PlaneAppOptions['faults'];
    maxInflightIngest?: number;
    maxQueuedIngest?: number;
    ingestQueueWaitMs?: number;
    claimReleaseAfterMs?: number;
    takeoverAfterMs?: number;
    metricsPort?: number;
    prices?: PlaneConfig['prices'];
    /** How long a key made on the Keys page keeps its secret for its page (PlaneAppOptions). */
    newKeyShownForMs?: number;
    /** Told every statement the plane's database handle sends (plane/db/open.ts `StatementTrace`). */
    trace?: StatementTrace;
  } = {},
): Promise<TestPlane> {
  const database = await openTestPlaneDatabase(kind, o.trace);
  const plane = await startPlane(
    loadConfig(
      {},
      {
        host: '127.0.0.1',
        port: 0,
        dataDir: 'memory://',
        maxInflightIngest: o.maxInflightIngest ?? 16,
        maxQueuedIngest: o.maxQueuedIngest ?? 64,
        ingestQueueWaitMs: o.ingestQueueWaitMs ?? 10_000,
        ...(o.claimReleaseAfterMs !== undefined ? { claimReleaseAfterMs: o.claimReleaseAfterMs } : {}),
        ...(o.takeoverAfterMs !== undefined ? { takeoverAfterMs: o.takeoverAfterMs } : {}),
        ...(o.metricsPort !== undefined ? { metricsPort: o.metricsPort } : {}),
        ...(o.prices !== undefined ? { prices: o.prices } : {}),
      },
    ),
    {
      database,
      logger: pino({ level: 'silent' }),
      faults: o.faults,
      newKeyShownForMs: o.newKeyShownForMs,
    },
  );
  return {
    url: plane.url,
    metricsUrl: plane.metricsUrl,
    database,
    key: async (project, scopes) => (await createKey(database.db, { createProject: true, project, scopes })).key,
    async close() {
      await plane.close();
      await database.close();
    },
  };
}

export interface Call {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP call with a JSON (optionally gzip) body. */
export async function call(
  url: string,
  o: {
    method?: string;
    key?: string;
    json?: unknown;
    raw?: string | Buffer;
    gzip?: boolean;
    headers?: Record<string, string>;
  } = {},
): Promise<Call> {
  const headers: Record<string, string> = { ...(o.key ? { authorization: `Bearer ${o.key}` } : {}), ...o.headers };
  let body: Buffer | string | undefined;
  if (o.json !== undefined || o.raw !== undefined) {
    body = o.raw ?? JSON.stringify(o.json);
    headers['content-type'] ??= 'application/json';
    if (o.gzip) {
      body = gzipSync(body);
      headers['content-encoding'] = 'gzip';
    }
  }
  const init = {
    method: o.method ?? (body !== undefined ? 'POST' : 'GET'),
    headers,
    body: body as BodyInit | undefined,
  };
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    // a kept-alive socket the server closed just as this request went out (a busy machine widens that window):
    // nothing was answered, so one retry on a new connection is what any HTTP client does
    if (!['ECONNRESET', 'UND_ERR_SOCKET'].includes((e as { cause?: { code?: string } }).cause?.code ?? '')) throw e;
    res = await fetch(url, init);
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/**
 * Give up `writerId`'s hold on a run at the plane (its owner's release), so
 * another writer's rows of it are taken: while a writer holds a run, the plane
 * refuses every other writer's rows of it (`taken_over`).
 */
export async function releaseHold(planeUrl: string, key: string, executionId: string, writerId: string): Promise<void> {
  const r = await call(`${planeUrl}/v1/executions/${encodeURIComponent(executionId)}/lease`, {
    key,
    json: { writerId, holder: `${writerId}#test`, ttlMs: 1000, release: true },
  });
  if (r.status !== 200 || !(r.body as { released?: boolean }).released)
    throw new Error(`${writerId}'s hold on ${executionId} was not released: ${r.status} ${JSON.stringify(r.body)}`);
}
