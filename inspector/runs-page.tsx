/** @jsxImportSource hono/jsx */
/** The inspector's run list: filters, one row per run, cursor pages. */
import { useContext, type FC } from 'hono/jsx';
import type { UsageTotal } from '../shared/usage.js';
import { hasEnded, holdOf, holdWords, type LeaseView, type LostAtPlane, statusWord } from '../support/run-words.js';
import { FRAME } from './frame.js';
import {
  Badge,
  clip,
  Id,
  duration,
  Incomplete,
  Layout,
  LiveRegion,
  LiveToggle,
  num,
  pageText,
  Table,
  Time,
  Writer,
} from './layout.js';
import { LostBadge } from './lost-at-plane.js';
import { CostText } from './cost.js';
import type { Prices } from '../support/prices.js';
import type { Counted } from '../support/count.js';

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
  /** this store lost the run at the plane (its newest rows refused there; a local store's): from which row, and why */
  lostAtPlane?: LostAtPlane | null;
}

/** How long a run ran, for an ended one (its first-to-last row time); for one that has not ended, only the time up to its newest row. */
const RunDuration: FC<{ r: RunItem }> = ({ r }) => {
  if (!r.startedAt || !r.lastWriteAt) return <>—</>;
  const ms = Date.parse(r.lastWriteAt) - Date.parse(r.startedAt);
  if (hasEnded(r.status)) return <>{duration(ms)}</>;
  return <span title="not ended: the time from its first row to its newest">{duration(ms)} to its last row</span>;
};

export interface RunsFilters {
  status?: string;
  writer?: string;
  q?: string;
  /** agent path contains this (any case) */
  agent?: string;
  /** a failed run's error code */
  error?: string;
  /** only runs updated within this window: '1h', '24h', '7d' */
  since?: string;
  /** '1': only the runs that need attention (`RunsQuery.attention`) */
  attention?: string;
}

/** The statuses the run list filters by (the form's choices). */
export const RUN_STATUSES = ['running', 'paused', 'completed', 'failed', 'cancelled'];

export const SINCE_WINDOWS: Record<string, number> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};

/** A pause with no row for this long needs attention: its answer is overdue. */
export const ATTENTION_PAUSED_MS = 86_400_000;

/** How many runs match, as honestly as the source counted them. */
const countWords = (c: Counted) =>
  c.more
    ? `more than ${num(c.n)} runs`
    : `${c.atMost ? 'at most ' : ''}${num(c.n)} run${c.n === 1 && !c.atMost ? '' : 's'}`;

/** What "Needs attention" lists, in the words of the source at hand (a local store has no claim conflicts or holes). */
const AttentionWords: FC = () => (
  <p class="muted" data-testid="attention-words">
    Needs attention: failed runs; stale runs (still running, but their runner&rsquo;s lease expired without an end: it
    crashed or stalled); runs paused with no answer for over a day
    {useContext(FRAME).kind === 'plane' ? '; runs with a claim conflict or an incomplete copy here' : ''}.
  </p>
);

export const RunsPage: FC<{
  items: RunItem[];
  count: Counted;
  next: string | null;
  first: boolean;
  live: boolean;
  filters: RunsFilters;
  query: (cursor: string | null, live?: boolean) => string;
  /** the configured model prices: a Cost column (absent or null: no prices, no column) */
  prices?: Prices | null;
}> = ({ items, count, next, first, live, filters, query, prices }) => {
  const filtered = Object.values(filters).some((v) => v);
  const attentionOnly = filters.attention === '1' && Object.values(filters).filter((v) => v).length === 1;
  return (
    <Layout title="Runs" live={live}>
      <h1>Runs</h1>
      <p class="views">
        <a href="/" aria-current={filtered ? undefined : 'page'}>
          All runs
        </a>
        <a href="/?attention=1" aria-current={attentionOnly ? 'page' : undefined} data-testid="attention-view">
          Needs attention
        </a>
      </p>
      {/* biome-ignore lint/a11y/useSemanticElements: the <search> element is too new for the browsers a phone may run; the role says the same */}
      <form class="filters" method="get" action="/" role="search">
        <label>
          Execution id
          <input type="search" name="q" value={filters.q ?? ''} placeholder="starts with…" data-shortcut="search" />
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
          Agent
          <input type="search" name="agent" value={filters.agent ?? ''} placeholder="contains…" />
        </label>
        <label>
          Error code
          <input type="search" name="error" value={filters.error ?? ''} placeholder="e.g. RUN_FAILED" />
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
        <label class="check">
          <input type="checkbox" name="attention" value="1" checked={filters.attention === '1'} />
          Needs attention
        </label>
        <button type="submit">Filter</button>
      </form>
      {filters.attention === '1' && <AttentionWords />}
      <LiveToggle live={live} href={(on) => query(null, on)} />
      <p class="muted">
        "running" means no end marker yet: still running, or crashed without a marker; "stale", that its runner's lease
        expired without one (it crashed or stalled): recoverRuns takes it up.
      </p>
      <LiveRegion name="runs">
        <p data-testid="run-count" title={count.atMost ? RUN_COUNT_AT_MOST : undefined}>
          {countWords(count)}
        </p>
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
            !!prices && 'Cost',
          ]}
        >
          {items.map((r) => {
            const hold = holdOf(r, { lostAtPlane: !!r.lostAtPlane });
            return (
              <tr>
                <td class="mono">
                  <a href={`/runs/${encodeURIComponent(r.executionId)}`} title={r.executionId} data-row-link="">
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
                  <Writer id={r.writerId} />
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
                <td class="wide-only">{num(r.rowCount)}</td>
                <td class="mono wide-only">{r.lastNodeId ? <Id id={r.lastNodeId} /> : ''}</td>
                <td
                  class="wide-only"
                  data-testid="tokens"
                  title={
                    r.usage
                      ? `${num(r.usage.inputTokens)} input (${num(r.usage.cachedInputTokens)} cached), ${num(r.usage.outputTokens)} output, ${num(r.usage.calls)} model calls`
                      : 'no model usage reported'
                  }
                >
                  {r.usage ? `${num(r.usage.inputTokens)} in / ${num(r.usage.outputTokens)} out` : ''}
                </td>
                {prices && (
                  <td data-testid="cost">
                    <CostText usage={r.usage} prices={prices} />
                  </td>
                )}
              </tr>
            );
          })}
          {items.length === 0 && (
            <tr>
              <td colspan={prices ? 11 : 10} class="muted">
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
};

/** Why a count says "at most". */
const RUN_COUNT_AT_MOST =
  'LangGraph threads are among these: one waiting at an interrupt is paused, not running, which the list reads page by page';
