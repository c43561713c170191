/** @jsxImportSource hono/jsx */
/**
 * A run's timeline, one page of it: its rows grouped by turn (each turn a `<details>`; the newest turns, a turn
 * with a row that failed, is in progress or is the open pause, and the turn of the row the page was opened at are
 * expanded, the others folded to one line), the filters by step and agent path, "go to seq", and the links to the
 * other pages. A row's anchor is `#seq-N` (and `#row-<id>`); `rowHref` is the link that lands on it from anywhere.
 */
import type { FC } from 'hono/jsx';
import { runErrorOf } from '../shared/errors.js';
import { Step } from '../shared/rows.js';
import { failureOutcome, failureWords } from '../support/run-words.js';
import { Badge, duration, Id, Time, Writer } from './layout.js';
import type { Hole, RowHead } from './source.js';

/** How many rows a timeline page shows (the page of a long run stays small: its turns fold, but their rows are sent). */
export const TIMELINE_PAGE = 50;
/** How many of the newest turns are expanded on the page of the run's newest rows. */
const NEWEST_OPEN = 2;

/** A link to row `seq` of a run that lands on it whatever page it is on: the timeline around it, scrolled to it. */
export const rowHref = (executionId: string, seq: number) =>
  `/runs/${encodeURIComponent(executionId)}?seq=${seq}#seq-${seq}`;

/** The page of row `seq` of a run: what its call did (inspector/row-page.tsx). */
export const rowDetailHref = (executionId: string, seq: number) =>
  `/runs/${encodeURIComponent(executionId)}/rows/${seq}`;

/**
 * What a row's badge may claim. A model-call or tool row is written *before* the
 * call, so its stored status says the boundary was recorded, not that the call
 * worked: the outcome is what came next (a later row: done; the failed run-end
 * marker right after it: failed, or stopped when the turn limit ended the run
 * before its call; nothing after it: in progress, or stale when the run is:
 * its runner's lease expired at this row). `next`: the row after it, when known
 * (a filtered page may not hold it).
 */
export function rowOutcome(
  r: RowHead,
  next: RowHead | undefined,
  execution: { status: string; lastSeq: number; error?: { code: string } | null },
): string {
  if (r.step === 'run_end' || r.step === 'hitl_pause') return r.status;
  const failedNext = next
    ? next.step === 'run_end' && next.status === 'failed'
    : r.seq + 1 === execution.lastSeq && execution.status === 'failed';
  if (failedNext) return failureOutcome(next ? runErrorOf(next.nodeOutput ?? null).code : execution.error?.code);
  // a step the run was cancelled after (or during): it did not go on
  if (
    next
      ? next.step === 'run_end' && next.status === 'cancelled'
      : r.seq + 1 === execution.lastSeq && execution.status === 'cancelled'
  )
    return 'cancelled';
  if (r.seq < execution.lastSeq) return 'done';
  if (execution.status === 'stale') return 'stale';
  return execution.status === 'running' ? 'in progress' : r.status;
}

/** How deep an agent path is nested (a supervisor's worker is one level in). */
const depth = (agentPath: string) => Math.min(6, agentPath.split('/').length - 1);

/**
 * The turn a row starts or continues at the top of the run: its own for a row of the run's agent or one of that
 * agent's tools (`agent:a`, `agent:a/tool:t`); null for a row of a worker or a graph under it, which belongs to
 * the turn of the call that delegated to it.
 */
export function topTurn(r: Pick<RowHead, 'agentPath' | 'turn'>): number | null {
  return r.agentPath.replace(/\/tool:[^/]*$/, '').includes('/') ? null : r.turn;
}

/** A row (`i`: its place on the page) or a hole of the run where it falls. */
type Item = { row: RowHead; outcome: string; i: number } | { gap: Hole };
/** A turn of the page: its rows (and holes); `turn` null for rows of a turn that began on the page before. */
interface Group {
  turn: number | null;
  items: Item[];
}

/** The page's rows and holes as turns, in seq order: a row of the top agent at another turn starts the next one. */
function groups(items: Item[]): Group[] {
  const out: Group[] = [];
  for (const it of items) {
    const turn = 'row' in it ? topTurn(it.row) : null;
    const cur = out[out.length - 1];
    if (cur && (turn === null || turn === cur.turn)) cur.items.push(it);
    else out.push({ turn, items: [it] });
  }
  return out;
}

const NOTABLE = new Set(['failed', 'stopped', 'stale', 'in progress', 'cancelled']);

export interface TimelineProps {
  executionId: string;
  execution: { status: string; lastSeq: number; error: { code: string; message: string } | null };
  /** the page's rows, in seq order */
  rows: RowHead[];
  /** the run's holes in this page's span (shown where they fall; only when the page is not filtered) */
  gaps: Hole[];
  /** the row the page was opened at (`?seq=N`): its turn is expanded */
  target: number | null;
  /** said above the rows: why the target is not among them, or that nothing matches */
  notice: string | null;
  /** the page holds the run's newest rows (its newest turns are expanded) */
  newest: boolean;
  /** the other pages (null: none that way) */
  nav: { first: string | null; earlier: string | null; later: string | null; newest: string | null };
  /** a link to this page with some parameters changed (a row's diff link keeps the timeline's page) */
  here: (change: Record<string, string | null>, anchor?: string) => string;
}

const Pager: FC<{ nav: TimelineProps['nav'] }> = ({ nav }) =>
  nav.first || nav.earlier || nav.later || nav.newest ? (
    <div class="pager">
      {nav.first && <a href={nav.first}>First rows</a>}
      {nav.earlier && (
        <a href={nav.earlier} rel="prev">
          ← Earlier rows
        </a>
      )}
      {nav.later && (
        <a href={nav.later} rel="next">
          Later rows →
        </a>
      )}
      {nav.newest && <a href={nav.newest}>Newest rows</a>}
    </div>
  ) : null;

/** The rows of one page of the timeline, grouped by turn (a live region: live updates replace it in place). */
export const Timeline: FC<TimelineProps> = (p) => {
  const items: Item[] = [];
  let hole = 0;
  for (const [i, r] of p.rows.entries()) {
    for (; hole < p.gaps.length && p.gaps[hole].seq < r.seq; hole++) items.push({ gap: p.gaps[hole] });
    // the row after it only when it is the run's next row (a filtered page skips rows)
    const next = p.rows[i + 1]?.seq === r.seq + 1 ? p.rows[i + 1] : undefined;
    items.push({ row: r, outcome: rowOutcome(r, next, p.execution), i });
  }
  for (; hole < p.gaps.length; hole++) items.push({ gap: p.gaps[hole] });
  const turns = groups(items);
  const first = p.rows[0];
  const last = p.rows[p.rows.length - 1];
  return (
    <>
      <Pager nav={p.nav} />
      {p.notice && (
        <p class="muted" data-testid="timeline-notice">
          {p.notice}
        </p>
      )}
      {first && (
        <p class="muted" data-testid="timeline-span">
          Rows #{first.seq}–#{last.seq} ({p.rows.length} shown) of #0–#{p.execution.lastSeq}
          {p.newest && ', the newest'}. A row&rsquo;s + time is the time since the row before it.
        </p>
      )}
      <div class="turns">
        {turns.map((g, gi) => {
          const rows = g.items.flatMap((it) => ('row' in it ? [it] : []));
          const notable =
            g.items.some((it) => 'gap' in it) ||
            rows.some(
              (it) =>
                NOTABLE.has(it.outcome) ||
                (it.row.step === 'hitl_pause' && it.row.seq === p.execution.lastSeq && p.execution.status === 'paused'),
            );
          const open =
            notable ||
            (p.target !== null && g.items.some((it) => ('row' in it ? it.row.seq : it.gap.seq) === p.target)) ||
            (p.newest && gi >= turns.length - NEWEST_OPEN);
          const steps = [...new Set(rows.map((it) => it.row.step))];
          // the agents the turn delegated to (a worker's rows nest under it), by their last path segment
          const agents = [
            ...new Set(
              rows
                .filter((it) => topTurn(it.row) === null)
                .map(
                  (it) =>
                    it.row.agentPath
                      .replace(/\/tool:[^/]*$/, '')
                      .split('/')
                      .pop()!,
                ),
            ),
          ];
          const seqs = g.items.map((it) => ('row' in it ? it.row.seq : it.gap.seq));
          const worst = rows.find((it) => NOTABLE.has(it.outcome))?.outcome;
          return (
            <details class="turn" open={open}>
              <summary>
                <strong>{g.turn === null ? 'Earlier turn, continued' : `Turn ${g.turn}`}</strong>{' '}
                <span class="muted">
                  #{seqs[0]}
                  {seqs.length > 1 && `–#${seqs[seqs.length - 1]}`} · {rows.length} row{rows.length === 1 ? '' : 's'}
                  {steps.length > 0 && ` · ${steps.join(', ')}`}
                  {agents.length > 0 && ` · by ${agents.join(', ')}`}
                </span>{' '}
                {worst && <Badge status={worst} />}
                {g.items.some((it) => 'gap' in it) && <Badge status="missing" />}
              </summary>
              <ol class="timeline">
                {g.items.map((it) => {
                  if ('gap' in it)
                    return (
                      <li class="gap st-failed" id={`seq-${it.gap.seq}`}>
                        <div class="row-head">
                          <strong>#{it.gap.seq}</strong>
                          <span class="error">
                            not on this plane: <span class="mono">{it.gap.code}</span> — {it.gap.reason}
                          </span>
                        </div>
                      </li>
                    );
                  const { row: r, outcome } = it;
                  const prevOnPage = p.rows[it.i - 1];
                  // the time since the row before it, when that is the run's previous row (a filter skips rows)
                  const prev = prevOnPage?.seq === r.seq - 1 ? prevOnPage : undefined;
                  return (
                    <li class={`st-${outcome.replace(/\s+/g, '-')} depth-${depth(r.agentPath)}`} id={`seq-${r.seq}`}>
                      <span id={`row-${r.id}`} />
                      <div class="row-head">
                        <strong>#{r.seq}</strong>
                        <span class="mono">
                          <Id id={r.nodeId} />
                        </span>
                        <span>{r.step}</span>
                        <Badge status={outcome} />
                      </div>
                      <div class="row-meta">
                        <span class="mono">
                          <Id id={r.agentPath} />
                        </span>
                        {/* the writer where it changes: most runs have one */}
                        {prevOnPage?.writerId !== r.writerId && <Writer id={r.writerId} />}
                        <Time iso={r.createdAt} />
                        {prev && <span>+{duration(Date.parse(r.createdAt) - Date.parse(prev.createdAt))}</span>}
                        <a href={rowDetailHref(p.executionId, r.seq)}>details</a>
                        {r.seq > 0 && (
                          <a href={p.here({ a: String(r.seq - 1), b: String(r.seq) }, '#diff-h')}>diff with previous</a>
                        )}
                      </div>
                      {r.interruptReason && <div class="muted">paused: {r.interruptReason}</div>}
                      {(outcome === 'failed' || outcome === 'stopped') && r.step !== 'run_end' && p.execution.error && (
                        <div class="error" data-testid="failure">
                          {failureWords(p.execution.error.code, r)}
                        </div>
                      )}
                    </li>
                  );
                })}
              </ol>
            </details>
          );
        })}
      </div>
      <Pager nav={p.nav} />
    </>
  );
};

/** Every agent path a row of the page is under (its own and each one above it), for the filter's suggestions. */
export function agentPathsOf(rows: RowHead[]): string[] {
  const paths = new Set<string>();
  for (const r of rows) {
    const parts = r.agentPath.split('/');
    for (let i = 1; i <= parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  return [...paths].sort();
}

/**
 * The timeline's forms: the filter (step, agent path) and "go to seq". Outside the live region (live updates never
 * replace a form); plain GET forms, so they work without scripts. Going to a seq shows every row around it.
 */
export const TimelineForms: FC<{
  executionId: string;
  lastSeq: number;
  filter: { step?: string; agent?: string };
  agentPaths: string[];
  live: boolean;
  /** the page without the filter (null: it is not filtered) */
  unfiltered: string | null;
}> = (p) => {
  const action = `/runs/${encodeURIComponent(p.executionId)}`;
  const live = p.live && <input type="hidden" name="live" value="1" />;
  return (
    <div class="timeline-tools">
      <form class="filters" method="get" action={action} aria-label="Filter the timeline">
        <label>
          Step
          <select name="step">
            <option value="">every step</option>
            {Step.options.map((s) => (
              <option value={s} selected={s === p.filter.step}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent path (and under it)
          <input name="agent" value={p.filter.agent ?? ''} list="agent-paths" autocomplete="off" />
        </label>
        <datalist id="agent-paths">
          {p.agentPaths.map((a) => (
            <option value={a} />
          ))}
        </datalist>
        {live}
        <button type="submit">Filter</button>
        {p.unfiltered && <a href={p.unfiltered}>Every row</a>}
      </form>
      <form class="filters" method="get" action={action} aria-label="Go to a row">
        <label>
          Go to seq
          <input type="number" name="jump" min="0" max={String(p.lastSeq)} required />
        </label>
        {live}
        <button type="submit">Go</button>
      </form>
    </div>
  );
};
