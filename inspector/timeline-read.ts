/**
 * Which page of a run's timeline a request asks for, and reading it from a source. A page is named by seqs (the
 * rows' cursor in every source), so anyone can link to one:
 *
 * - nothing: the run's newest rows (what a live page follows);
 * - `from=N`: the rows from seq N on; `before=N`: the rows before seq N;
 * - `seq=N`: the rows around row N (a link to a row is `?seq=N#seq-N`: `rowHref`);
 * - `jump=N`: the "go to seq" form, answered with a redirect to `?seq=N#seq-N` (a form cannot add the anchor);
 * - `step=…`, `agent=…`: only rows of that step, of that agent path and under it.
 *
 * Each page is `TIMELINE_PAGE` rows at most, read as one or two pages of the source's listing; whether there are
 * rows before or after it is read too (one row each way), so its links lead only where rows are.
 */
import { type Step, Step as Steps } from '../shared/rows.js';
import { oneOfProblem } from '../support/validate.js';
import type { Hole, InspectorSource, RowHead } from './source.js';
import { TIMELINE_PAGE, type TimelineProps } from './timeline.js';

export interface TimelineQuery {
  from?: number;
  before?: number;
  seq?: number;
  jump?: number;
  step?: Step;
  agent?: string;
}

/** The query's timeline parameters, or every problem with them named (a link the page did not make is a mistake to say, not to drop). */
export function timelineQuery(q: Record<string, string>): TimelineQuery | { problems: string[] } {
  const problems: string[] = [];
  const out: TimelineQuery = {};
  for (const k of ['from', 'before', 'seq', 'jump'] as const) {
    const v = q[k];
    if (v === undefined || v === '') continue;
    if (/^\d+$/.test(v) && Number.isSafeInteger(Number(v))) out[k] = Number(v);
    else problems.push(`${k}: must be a seq, a whole number from 0 (got ${JSON.stringify(v.slice(0, 40))})`);
  }
  if (q.step) {
    const problem = oneOfProblem('step', q.step, Steps.options);
    if (problem) problems.push(problem);
    else out.step = q.step as Step;
  }
  if (q.agent) out.agent = q.agent;
  return problems.length ? { problems } : out;
}

/** The page's parameters, as `here` keeps or changes them. */
export const TIMELINE_PARAMS = ['from', 'before', 'seq', 'step', 'agent'] as const;

export type TimelinePage = Omit<TimelineProps, 'executionId' | 'execution' | 'here'>;

/**
 * The page `t` names of run `executionId` (`lastSeq`: its newest row; `holes`: the source's, shown where they fall
 * on an unfiltered page); `link` makes the links to the other pages from a change of the page's parameters.
 */
export async function readTimeline(
  src: InspectorSource,
  executionId: string,
  lastSeq: number,
  holes: Hole[],
  t: TimelineQuery,
  link: (change: Partial<Record<(typeof TIMELINE_PARAMS)[number], string | null>>) => string,
): Promise<TimelinePage> {
  const filter = { step: t.step, agentPath: t.agent };
  const limit = TIMELINE_PAGE;
  const list = (q: { after?: number; before?: number; limit: number }) =>
    src.listRows(executionId, { ...q, ...filter });
  let rows: RowHead[];
  let earlier: boolean;
  let later: boolean;
  // a bound past the run's newest row reads as the newest page (and stays within what every store's seq can hold)
  const past = lastSeq + 1;
  // where the page begins and ends: its first and last rows, or the bound it was asked at when it has none
  let lo: number;
  let hi: number;
  if (t.seq !== undefined) {
    const at = Math.min(t.seq, past);
    const before = await list({ before: at, limit });
    const after = await list({ after: at - 1, limit });
    // half a page before the row, the rest after it; near an end of the run, more of the other side
    const nb = Math.min(before.items.length, Math.max(Math.floor(limit / 2), limit - after.items.length));
    const na = Math.min(after.items.length, limit - nb);
    rows = [...before.items.slice(before.items.length - nb), ...after.items.slice(0, na)];
    earlier = before.more || nb < before.items.length;
    later = after.more || na < after.items.length;
    [lo, hi] = [rows[0]?.seq ?? at, rows[rows.length - 1]?.seq ?? at - 1];
  } else if (t.from !== undefined) {
    const from = Math.min(t.from, past);
    const page = await list({ after: from - 1, limit });
    rows = page.items;
    later = page.more;
    [lo, hi] = [rows[0]?.seq ?? from, rows[rows.length - 1]?.seq ?? from - 1];
    earlier = lo > 0 && (await list({ before: lo, limit: 1 })).items.length > 0;
  } else {
    const before = Math.min(t.before ?? past, past);
    const page = await list({ before: t.before === undefined ? undefined : before, limit });
    rows = page.items;
    earlier = page.more;
    [lo, hi] = [rows[0]?.seq ?? before, rows[rows.length - 1]?.seq ?? before - 1];
    later = before < past && (await list({ after: hi, limit: 1 })).items.length > 0;
  }
  const filtered = t.step !== undefined || t.agent !== undefined;
  // the holes between the page's rows, and before (after) them when no row of the run is there
  const gaps = filtered
    ? []
    : holes.filter((h) => h.seq > (earlier ? lo : -1) && h.seq < (later ? hi : past) && h.seq <= lastSeq);
  const target = t.seq ?? null;
  const shown = target !== null && (rows.some((r) => r.seq === target) || gaps.some((h) => h.seq === target));
  const notice =
    target !== null && !shown
      ? target > lastSeq
        ? `This run has no row #${target}: its newest is #${lastSeq}.`
        : filtered
          ? `Row #${target} does not match the filter.`
          : `Row #${target} is not here.`
      : rows.length === 0 && gaps.length === 0
        ? filtered
          ? 'No rows match the filter here.'
          : 'No rows here.'
        : null;
  const pos = { from: null, before: null, seq: null };
  return {
    rows,
    gaps,
    target,
    notice,
    newest: !later,
    nav: {
      first: earlier ? link({ ...pos, from: '0' }) : null,
      earlier: earlier ? link({ ...pos, before: String(lo) }) : null,
      later: later ? link({ ...pos, from: String(hi + 1) }) : null,
      newest: later ? link(pos) : null,
    },
  };
}
