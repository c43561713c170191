/** @jsxImportSource hono/jsx */
/**
 * The sync status of a local store's outbox (`waymark ui`): what waits to
 * reach the plane, what it refused, the drain's last rounds, and the runs the
 * plane's copy lacks rows of. The page form of `waymark sync status`.
 */
import type { FC } from 'hono/jsx';
import type { OutboxStats } from '../support/outbox-stats.js';
import { duration, Layout, num, Time } from './layout.js';

export interface SyncStatus extends OutboxStats {
  writerId: string;
  /** the drain's note (null: this store never connected to a plane) */
  drain: {
    state: string;
    at: string;
    lastSuccessAt: string | null;
    lastAckAt: string | null;
    lastError: string | null;
    lastErrorAt: string | null;
  } | null;
  /** runs with a row the plane refused that left a hole in its copy: [run, rows refused] */
  incomplete: [string, number][];
  /** runs whose rows were refused by seq only (the plane holds another branch there) */
  diverged: [string, number][];
  /** runs another machine took over at the plane while this one was away: [run, the plane's reason] */
  lost: [string, string][];
}

const runLink = (id: string) => <a href={`/runs/${encodeURIComponent(id)}`}>{id}</a>;

export const SyncPage: FC<{ s: SyncStatus }> = ({ s }) => {
  const d = s.drain;
  // the last error is current only when no successful round came after it
  const errorCleared = d?.lastError && d.lastSuccessAt && (!d.lastErrorAt || d.lastSuccessAt >= d.lastErrorAt);
  return (
    <Layout title="Sync status">
      <h1>Sync status</h1>
      <p class="muted">
        This store's outbox: every change waits here until the plane acknowledges it. The application's replica (
        <span class="mono">connectPlane</span>) sends it; this page only reads.
      </p>
      <div class="table-wrap">
        <table class="sync">
          <tbody>
            <tr>
              <th scope="row">Writer</th>
              <td class="mono">{s.writerId}</td>
            </tr>
            <tr data-testid="backlog">
              <th scope="row">Backlog</th>
              <td>
                {num(s.pendingCount)} row{s.pendingCount === 1 ? '' : 's'}, {num(s.pendingBytes)} bytes
                {!d && s.pendingCount > 0 && <> (kept in the outbox until a plane is connected with connectPlane)</>}
                {s.oldestPendingAt && (
                  <>
                    {' '}
                    · oldest waiting since <Time iso={s.oldestPendingAt} /> ({duration(s.oldestPendingAgeMs ?? 0)})
                  </>
                )}
              </td>
            </tr>
            <tr data-testid="quarantined">
              <th scope="row">Quarantined</th>
              <td>
                {s.quarantinedCount > 0 ? <a href="/quarantine">{num(s.quarantinedCount)}</a> : '0'}
                {s.lastQuarantineReason && <> (last: {s.lastQuarantineReason})</>}
              </td>
            </tr>
            <tr data-testid="drain">
              <th scope="row">Last drain</th>
              <td>
                {d ? (
                  <>
                    {d.state} at <Time iso={d.at} />
                  </>
                ) : (
                  'never connected to a plane'
                )}
              </td>
            </tr>
            <tr>
              <th scope="row">Last success</th>
              <td>
                {d?.lastSuccessAt ? (
                  <>
                    <Time iso={d.lastSuccessAt} /> (outbox emptied)
                  </>
                ) : (
                  'none'
                )}
              </td>
            </tr>
            <tr>
              <th scope="row">Last ack</th>
              <td>
                <Time iso={d?.lastAckAt ?? null} />
              </td>
            </tr>
            <tr data-testid="last-error">
              <th scope="row">Last error</th>
              <td class={d?.lastError && !errorCleared ? 'error' : undefined}>
                {!d?.lastError ? (
                  'none'
                ) : (
                  <>
                    {errorCleared ? 'none since the last success (earlier: ' : ''}
                    {d.lastError}
                    {d.lastErrorAt && (
                      <>
                        {' '}
                        at <Time iso={d.lastErrorAt} />
                      </>
                    )}
                    {errorCleared ? ')' : ''}
                  </>
                )}
              </td>
            </tr>
            <tr data-testid="plane-copy">
              <th scope="row">Plane copy</th>
              <td>
                {!d && s.incomplete.length === 0 ? (
                  'nothing sent yet: there is no plane copy'
                ) : s.incomplete.length === 0 ? (
                  s.quarantinedCount ? (
                    'complete (no hole: the rows the plane refused are not missing from its copy, see below)'
                  ) : (
                    'complete (no row refused)'
                  )
                ) : (
                  <span class="error">
                    incomplete for {num(s.incomplete.length)} run{s.incomplete.length === 1 ? '' : 's'}:{' '}
                    {s.incomplete.map(([id, n], i) => (
                      <>
                        {i > 0 && ', '}
                        {runLink(id)} ({num(n)} row{n === 1 ? '' : 's'} refused)
                      </>
                    ))}
                    ; the plane cannot restore them elsewhere; this store keeps them whole
                  </span>
                )}
              </td>
            </tr>
            {s.diverged.length > 0 && (
              <tr>
                <th scope="row">Refused by seq</th>
                <td>
                  {s.diverged.map(([id, n], i) => (
                    <>
                      {i > 0 && ', '}
                      {runLink(id)} ({num(n)} row{n === 1 ? '' : 's'})
                    </>
                  ))}
                  : the plane holds other rows at those seqs (another machine's branch after a double claim, or a hole:
                  the plane's run page says which)
                </td>
              </tr>
            )}
            <tr>
              <th scope="row">Lost runs</th>
              <td>
                {s.lost.length === 0
                  ? 'none'
                  : s.lost.map(([id, why], i) => (
                      <>
                        {i > 0 && '; '}
                        {runLink(id)}: {why}
                      </>
                    ))}
              </td>
            </tr>
          </tbody>
        </table>
      </div>
    </Layout>
  );
};
