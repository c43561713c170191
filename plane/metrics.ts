/**
 * Prometheus metrics, one registry per plane app (no process-global registry).
 *
 * These are operator metrics: process-wide counters that include every
 * project's rows and quarantine. They are served by `metricsApp` on a listener
 * of their own (WAYMARK_METRICS_PORT, loopback by default), never on the main
 * listener where project keys authenticate.
 */
import { Hono } from 'hono';
import { count } from 'drizzle-orm';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PlaneDb } from './db/open.js';
import { quarantine } from './db/schema.js';
import { ingestStats } from './ingest.js';

export function planeMetrics() {
  const registry = new Registry();
  return {
    registry,
    requests: new Counter({
      name: 'waymark_http_requests_total',
      help: 'HTTP requests',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    ingestRows: new Counter({
      name: 'waymark_ingest_rows_total',
      help: 'Ingested rows by result',
      labelNames: ['result'],
      registers: [registry],
    }),
    ingestSeconds: new Histogram({
      name: 'waymark_ingest_duration_seconds',
      help: 'Ingest request latency',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    decisionsDropped: new Counter({
      name: 'waymark_decisions_dropped_total',
      help: 'Ingested decisions dropped because their pause already had one (the first is kept)',
      registers: [registry],
    }),
    ingestWaiting: new Gauge({
      name: 'waymark_ingest_waiting',
      help: 'Ingest batches waiting for an admission slot',
      registers: [registry],
    }),
    ingestTransactions: new Counter({
      name: 'waymark_ingest_transactions_total',
      help: "Ingest transactions committed (a project's batches that arrive while its transactions are under way share the next one)",
      registers: [registry],
    }),
    ingestBatches: new Counter({
      name: 'waymark_ingest_batches_total',
      help: 'Ingest batches committed (over waymark_ingest_transactions_total: batches per transaction)',
      registers: [registry],
    }),
    feedEntries: new Counter({
      name: 'waymark_feed_entries_total',
      help: 'Entries served by the change and decision feeds (GET /v1/changes: changes, GET /v1/writer-changes: changes_writer, GET /v1/decisions: decisions, GET /v1/writer-decisions: decisions_writer)',
      labelNames: ['feed'],
      registers: [registry],
    }),
    quarantineRows: new Gauge({
      name: 'waymark_quarantine_rows',
      help: 'Rows held in quarantine',
      registers: [registry],
    }),
  };
}
export type PlaneMetrics = ReturnType<typeof planeMetrics>;

/** The operator listener's app: `GET /metrics` and nothing else. Whoever reaches the port is the operator. */
export function metricsApp(db: PlaneDb, metrics: PlaneMetrics): Hono {
  const app = new Hono();
  // ingest's own counts of its transactions (plane/ingest.ts), carried into the counters at each scrape
  const carried = { transactions: 0, batches: 0 };
  app.get('/metrics', async (c) => {
    const now = ingestStats(db);
    metrics.ingestTransactions.inc(now.transactions - carried.transactions);
    metrics.ingestBatches.inc(now.batches - carried.batches);
    Object.assign(carried, { transactions: now.transactions, batches: now.batches });
    const [{ n }] = await db.select({ n: count() }).from(quarantine);
    metrics.quarantineRows.set(Number(n));
    c.header('content-type', metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });
  return app;
}
