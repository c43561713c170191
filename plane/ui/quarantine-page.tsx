/** @jsxImportSource hono/jsx */
/** The inspector's quarantine: rows the plane refused, with why and their payload. */
import type { FC } from 'hono/jsx';
import { ago, Layout } from './layout.js';

export const QuarantinePage: FC<{
  items: {
    id: number;
    writerId: string;
    rowId: string | null;
    kind: string | null;
    executionId: string | null;
    code: string;
    reason: string;
    payload: string;
    truncated: boolean;
    receivedAt: string;
  }[];
  next: string | null;
}> = ({ items, next }) => (
  <Layout title="Quarantine">
    <h1>Quarantine</h1>
    <p class="muted">Rows the plane refused. They never reached the rows tables; the payload is kept up to 16 KiB.</p>
    {items.length === 0 && <p>Nothing quarantined.</p>}
    {items.map((q) => (
      <article class="card" id={`q-${q.id}`}>
        <div class="row-head">
          <strong>#{q.id}</strong>
          <span class="badge s-failed">{q.code}</span>
          <span>{q.reason}</span>
        </div>
        <div class="row-meta">
          <span>
            writer <span class="mono">{q.writerId}</span>
          </span>
          {q.executionId && (
            <span>
              run <a href={`/runs/${encodeURIComponent(q.executionId)}`}>{q.executionId}</a>
            </span>
          )}
          {q.kind && <span>kind {q.kind}</span>}
          <span title={q.receivedAt}>{ago(q.receivedAt)}</span>
        </div>
        <details>
          <summary>Payload{q.truncated ? ' (truncated)' : ''}</summary>
          <pre>{q.payload.slice(0, 4096)}</pre>
        </details>
      </article>
    ))}
    {next && (
      <div class="pager">
        <a href={`/quarantine?cursor=${encodeURIComponent(next)}`}>Next →</a>
      </div>
    )}
  </Layout>
);
