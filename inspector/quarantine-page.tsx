/** @jsxImportSource hono/jsx */
/**
 * The inspector's quarantine: what the plane refused, with why. On the plane,
 * the rows it refused with their payload; under `waymark ui`, the entries of
 * this store's outbox the plane refused (the rows themselves stay whole here).
 */
import { useContext, type FC } from 'hono/jsx';
import { FRAME } from './frame.js';
import { ago, Layout, Writer } from './layout.js';

export interface QuarantineItem {
  /** the plane's quarantine id, or the outbox event's id in a local store */
  id: number | string;
  writerId: string;
  rowId?: string | null;
  kind: string | null;
  executionId: string | null;
  code: string;
  reason: string;
  /** the refused payload (the plane keeps up to 16 KiB; a local store keeps the row itself instead) */
  payload?: string;
  truncated?: boolean;
  receivedAt: string;
}

export const QuarantinePage: FC<{ items: QuarantineItem[]; next: string | null }> = ({ items, next }) => {
  const local = useContext(FRAME).kind === 'local';
  return (
    <Layout title="Quarantine">
      <h1>Quarantine</h1>
      <p class="muted">
        {local
          ? "Entries of this store's outbox that the plane refused, with its reason. The rows stay whole in this store; the plane's copy of their runs lacks them."
          : 'Rows the plane refused. They never reached the rows tables; the payload is kept up to 16 KiB.'}
      </p>
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
              writer <Writer id={q.writerId} />
            </span>
            {q.executionId && (
              <span>
                run <a href={`/runs/${encodeURIComponent(q.executionId)}`}>{q.executionId}</a>
              </span>
            )}
            {q.kind && <span>kind {q.kind}</span>}
            <span title={q.receivedAt}>{ago(q.receivedAt)}</span>
          </div>
          {q.payload !== undefined && (
            <details>
              <summary>Payload{q.truncated ? ' (truncated)' : ''}</summary>
              <pre>{q.payload.slice(0, 4096)}</pre>
            </details>
          )}
        </article>
      ))}
      {next && (
        <div class="pager">
          <a href={`/quarantine?cursor=${encodeURIComponent(next)}`}>Next →</a>
        </div>
      )}
    </Layout>
  );
};
