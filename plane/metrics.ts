/** Prometheus metrics, one registry per plane app (no process-global registry). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export function planeMetrics() {
  const registry = new Registry();
  return {
    registry,
    requests: new Counter({ name: 'waymark_http_requests_total', help: 'HTTP requests', labelNames: ['method', 'route', 'status'], registers: [registry] }),
    ingestRows: new Counter({ name: 'waymark_ingest_rows_total', help: 'Ingested rows by result', labelNames: ['result'], registers: [registry] }),
    ingestSeconds: new Histogram({
      name: 'waymark_ingest_duration_seconds',
      help: 'Ingest request latency',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    quarantineRows: new Gauge({ name: 'waymark_quarantine_rows', help: 'Rows held in quarantine', registers: [registry] }),
  };
}
export type PlaneMetrics = ReturnType<typeof planeMetrics>;
