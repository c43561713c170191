/** @jsxImportSource hono/jsx */
/** The inspector's run list: filters, one row per run, cursor pages. */
import type { FC } from 'hono/jsx';
import type { UsageTotal } from '../shared/usage.js';
import { holdOf, holdWords, type LeaseView, type LostAtPlane, statusWord } from '../support/run-words.js';
import { LostBadge } from './lost-at-plane.js';
import {
  Badge,
  clip,
  Id,
  duration,
  Incomplete,
  Layout,
  LiveRegion,
  LiveToggle,
  pageText,
  ShortId,
  Table,
  Time,
} from './layout.js';

/** A column shown on wide screens only. */
const wide = (label: string) => ({ label, class: 'wide-only' });

export interface RunItem {
  executionId: string;
  status: string;
  rowCount: number;
  lastNodeId: string | null;
  agent?: string | null;
  writerId: string | null;
  createdAt: string;
  updatedAt: string;
  error: { code: string; message: string } | null;
  /** A cancelled run's reason (null: none was given; absent: not cancelled). */
  cancelReason?: string | null;
  complete: boolean;
  holeCount: number;
  claimConflicts: number;
  /** first and newest rows' times by the writer's clock */
  startedAt: string | null;
  lastWriteAt: string | null;
  /** model usage summed over the run's rows (null: none reported) */
  usage?: UsageTotal | null;
  /** the run's lease (the plane: its owner's hold) by the source's clock; absent or null: none known */
  lease?: LeaseView | null;
  /** this store's rows of the run were refused at the plane: it lost the run there (a local store's); null: it did not */
  lostAtPlane?: LostAtPlane | null;
}

/** Statuses of a run that ended: its first-to-last row time is how long it ran. */
const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** How long a run ran, for an ended one; for one that has not ended, only the time up to its newest row. */
const RunDuration: FC<{ r: RunItem }> = ({ r }) => {
  if (!r.startedAt || !r.lastWriteAt) return <>—</>;
  const ms = Date.parse(r.lastWriteAt) - Date.parse(r.startedAt);
  if (ENDED.has(r.status)) return <>{duration(ms)}</>;
  return <span title="not ended: the time from its first row to its newest">{duration(ms)} to its last row</span>;
};

export interface RunsFilters {
  status?: string;
  writer?: string;
  q?: string;
  /** only runs updated within this window: '1h', '24h', '7d' */
  since?: string;
}

/** The statuses the run list filters by (the form's choices). */
export const RUN_STATUSES = ['running', 'paused', 'completed', 'failed', 'cancelled'];

export const SINCE_WINDOWS: Record<string, number> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};

export const RunsPage: FC<{
  items: RunItem[];
  next: string | null;
  first: boolean;
  live: boolean;
  filters: RunsFilters;
  query: (cursor: string | null, live?: boolean) => string;
}> = ({ items, next, first, live, filters, query }) => (
  <Layout title="Runs" live={live}>
    <h1>Runs</h1>
    {/* biome-ignore lint/a11y/useSemanticElements: the <search> element is too new for the browsers a phone may run; the role says the same */}
    <form class="filters" method="get" action="/" role="search">
      <label>
        Execution id
        <input type="search" name="q" value={filters.q ?? ''} placeholder="starts with…" />
      </label>
      <label>
        Status
        <select name="status">
          {['', ...RUN_STATUSES].map((s) => (
            <option value={s} selected={(filters.status ?? '') === s}>
              {s || 'any'}
            </option>
          ))}
        </select>
      </label>
      <label>
        Updated
        <select name="since">
          {['', ...Object.keys(SINCE_WINDOWS)].map((s) => (
            <option value={s} selected={(filters.since ?? '') === s}>
              {s ? `in the last ${s}` : 'any time'}
            </option>
          ))}
        </select>
      </label>
      <label>
        Writer
        <input type="text" name="writer" value={filters.writer ?? ''} />
      </label>
      <button type="submit">Filter</button>
    </form>
    <LiveToggle live={live} href={(on) => query(null, on)} />
    <p class="muted">
      "running" means no end marker yet: still running, or crashed without a marker; "stale", that its runner's lease
      expired without one (it crashed or stalled): recoverRuns takes it up.
    </p>
    <LiveRegion name="runs">
      <Table
        class="runs"
        columns={[
          'Execution',
          'Status',
          'Agent',
          wide('Writer'),
          wide('Started'),
          wide('Duration'),
          'Last update',
          wide('Rows'),
          wide('Last node'),
          wide('Tokens'),
        ]}
      >
        {items.map((r) => {
          const hold = holdOf(r, { lostAtPlane: !!r.lostAtPlane });
          return (
            <tr>
              <td class="mono">
                <a href={`/runs/${encodeURIComponent(r.executionId)}`} title={r.executionId}>
                  <Id
                    id={
                      r.executionId.length > 40
                        ? `${r.executionId.slice(0, 31)}…${r.executionId.slice(-8)}`
                        : r.executionId
                    }
                  />
                </a>
              </td>
              <td>
                <Badge status={statusWord(r.status, hold)} /> {!r.complete && <Incomplete holeCount={r.holeCount} />}
                {r.claimConflicts > 0 && (
                  <span
                    class="badge s-failed"
                    data-testid="conflicted"
                    title="two writers answered one pause of this run: see its page"
                  >
                    claim conflict
                  </span>
                )}
                {r.lostAtPlane && <LostBadge lost={r.lostAtPlane} />}
                {hold && hold.kind !== 'held' && (
                  <div class="why" data-testid="hold">
                    {holdWords(hold, (iso) => (
                      <Time iso={iso} />
                    ))}
                  </div>
                )}
                {r.error && (
                  <div class="why error" title={pageText(r.error.message)}>
                    {r.error.code}: {clip(pageText(r.error.message), 80)}
                  </div>
                )}
                {r.status === 'cancelled' && r.cancelReason?.trim() && (
                  <div class="why muted" data-testid="cancel-reason" title={pageText(r.cancelReason)}>
                    <q>{clip(pageText(r.cancelReason), 80)}</q>
                  </div>
                )}
              </td>
              <td class="mono" data-testid="agent" title={r.agent ?? "the run's first row has not arrived"}>
                {r.agent ? <Id id={r.agent} /> : ''}
              </td>
              <td class="wide-only">
                <ShortId id={r.writerId} />
              </td>
              <td class="wide-only">
                <Time iso={r.startedAt ?? r.createdAt} />
              </td>
              <td class="wide-only" data-testid="duration">
                <RunDuration r={r} />
              </td>
              <td>
                <Time iso={r.updatedAt} relative />
              </td>
              <td class="wide-only">{r.rowCount}</td>
              <td class="mono wide-only">{r.lastNodeId ? <Id id={r.lastNodeId} /> : ''}</td>
              <td
                class="wide-only"
                data-testid="tokens"
                title={
                  r.usage
                    ? `${r.usage.inputTokens} input (${r.usage.cachedInputTokens} cached), ${r.usage.outputTokens} output, ${r.usage.calls} model calls`
                    : 'no model usage reported'
                }
              >
                {r.usage ? `${r.usage.inputTokens} in / ${r.usage.outputTokens} out` : ''}
              </td>
            </tr>
          );
        })}
        {items.length === 0 && (
          <tr>
            <td colspan={10} class="muted">
              No runs match.
            </td>
          </tr>
        )}
      </Table>
      <div class="pager">
        {!first && <a href={query(null, live)}>First page</a>}
        {next && (
          <a href={query(next, live)} rel="next">
            Next page →
          </a>
        )}
      </div>
    </LiveRegion>
  </Layout>
);
