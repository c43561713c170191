/** @jsxImportSource hono/jsx */
/** The inspector's writers: each writer's name, last contact, rows, backlog and incomplete runs. */
import type { FC } from 'hono/jsx';
import { ago, Layout, num, Table, Time, Writer } from '../../inspector/layout.js';

export const WritersPage: FC<{
  items: {
    writerId: string;
    firstSeen: string;
    lastSeen: string;
    rowsAcked: number;
    rowsRejected: number;
    backlogRows: number | null;
    backlogBytes: number | null;
    oldestPendingAt: string | null;
    incompleteRuns: string[];
  }[];
}> = ({ items }) => (
  <Layout title="Writers">
    <h1>Writers</h1>
    <p class="muted">
      Each machine or worker that replicates to this project, named by the API key it sends with, with the backlog it
      reported in its last batch.
    </p>
    <Table
      columns={['Writer', 'Last contact', 'Rows stored', 'Refused', 'Backlog', 'Behind by', 'Runs incomplete here']}
    >
      {items.map((w) => (
        <tr>
          <td>
            <Writer id={w.writerId} />
          </td>
          <td>
            <Time iso={w.lastSeen} relative />
          </td>
          <td>{num(w.rowsAcked)}</td>
          <td>{num(w.rowsRejected)}</td>
          <td data-testid="backlog">
            {w.backlogRows === null ? 'not reported' : `${num(w.backlogRows)} rows (${num(w.backlogBytes ?? 0)} bytes)`}
          </td>
          <td>
            {w.oldestPendingAt
              ? `oldest row waiting since ${ago(w.oldestPendingAt)}`
              : w.backlogRows
                ? '—'
                : 'up to date'}
          </td>
          <td data-testid="incomplete-runs">
            {w.incompleteRuns.length === 0
              ? 'none'
              : w.incompleteRuns.map((id, i) => (
                  <>
                    {i > 0 && ', '}
                    <a class="mono" href={`/runs/${encodeURIComponent(id)}`}>
                      {id}
                    </a>
                  </>
                ))}
          </td>
        </tr>
      ))}
      {items.length === 0 && (
        <tr>
          <td colspan={7} class="muted">
            No writer has reported yet.
          </td>
        </tr>
      )}
    </Table>
  </Layout>
);
