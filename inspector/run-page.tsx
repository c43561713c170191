/** @jsxImportSource hono/jsx */
/**
 * The inspector's page of one run: its pause, holes, conflicts, timeline (a page of it: timeline.tsx), state diff,
 * the newest part of its state (state-page.tsx) and idempotency entries. Its summary is sent first and the rest
 * when read (`RunPageProps.rest`, stream-page.tsx): the summary's reads are the run and its usage, the rest's all others.
 */
import type { Child, FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import type { IdempotencyEntry, PendingInterrupt } from '../shared/rows.js';
import type { UsageTotal } from '../shared/usage.js';
import type { StateDiff } from './diff.js';
import {
  holdOf,
  holdWords,
  type LeaseView,
  type LostAtPlane,
  PAUSE_WORDS,
  pauseStand,
  statusWord,
} from '../support/run-words.js';
import { CostText } from './cost.js';
import { DiffView } from './diff-view.js';
import type { Prices } from '../support/prices.js';
import { EFFECT_KEYS_WORDS, EffectKey } from './effect-key.js';
import { LostNotice } from './lost-at-plane.js';
import {
  Badge,
  clip,
  Id,
  Incomplete,
  json,
  Layout,
  LiveRegion,
  LiveToggle,
  num,
  pageText,
  Table,
  Time,
  Writer,
} from './layout.js';
import { StateTail } from './state-page.js';
import { type Deferral, Later } from './stream-page.js';
import { rowHref, Timeline, TimelineForms, type TimelineProps } from './timeline.js';

/** "a row" or "N rows": the refused holes of a run (its missing runs of seqs are listed, not counted here). */
const refusedRows = (holes: { code: string }[]) => {
  const n = holes.filter((h) => h.code !== 'missing').length;
  return n === 1 ? 'a row' : `${num(n)} rows`;
};

/**
 * An idempotency entry's result: pretty JSON when it is short, else folded to its first characters on one line
 * (a long run records many effect results; each opens to the whole of it).
 */
const EffectResult: FC<{ result: Json }> = ({ result }) => {
  const line = JSON.stringify(result) ?? 'undefined';
  if (line.length <= 80) return <pre>{json(result)}</pre>;
  return (
    <details class="result">
      <summary class="mono">{clip(line, 80)}</summary>
      <pre>{json(result)}</pre>
    </details>
  );
};

/**
 * A run's page: its start (`execution`, `usage`: the summary) sent first, the rest (`rest`: its reads) after it
 * (stream-page.ts), in `slot`.
 */
export interface RunPageProps {
  execution: {
    executionId: string;
    status: string;
    rowCount: number;
    lastSeq: number;
    writerId: string | null;
    updatedAt: string;
    error: { code: string; message: string } | null;
    complete: boolean;
    holeCount: number;
    /** the newest row's node (a LangGraph thread's is `langgraph:…`) */
    lastNodeId?: string | null;
    /** the run's lease (the plane: its owner's hold) by the source's clock; absent or null: none known */
    lease?: LeaseView | null;
    /** this store's rows of the run were refused at the plane: it lost the run there (a local store's); null: it did not */
    lostAtPlane?: LostAtPlane | null;
    /** A cancelled run's reason, from its cancel marker (null: none was given; absent: not cancelled). */
    cancelReason?: string | null;
  };
  /** a link to this page with some parameters changed, the others kept (the timeline's page and filter among them) */
  here: (change: Record<string, string | null>, anchor?: string) => string;
  live: boolean;
  /** model usage summed over all rows of the run */
  usage?: UsageTotal;
  /** the configured model prices: the run's cost beside its usage (absent or null: none configured, no cost) */
  prices?: Prices | null;
  /** The rest of the page: read once its start is sent. */
  rest: () => Promise<RunPageRest>;
  /** Where the rest goes (one per response: stream-page.ts). */
  slot: Deferral;
}

/** The parts of a run's page after its summary, read after the summary is sent. */
export interface RunPageRest {
  holes: { seq: number; code: string; reason: string; writerId: string; at: string }[];
  /** the page of the timeline shown (its rows, holes, links to the other pages) */
  timeline: Omit<TimelineProps, 'executionId' | 'execution' | 'here'>;
  /** the timeline's filter, and the agent paths it suggests */
  filter: { step?: string; agent?: string };
  agentPaths: string[];
  pause: {
    pending: PendingInterrupt;
    state: string;
    claimedBy: string | null;
    claimedAt: string | null;
    claim: { state: 'held' | 'applied'; claimedAt: string } | null;
    /** A LangGraph thread waiting at `interrupt()`: its context is the interrupt's value, and resuming the graph (`Command({ resume })`) answers it, not a decision. */
    graph?: boolean;
    /** A resumed pause's answer, as its claim row carries it (null or absent: none read). */
    answer?: Json | null;
  } | null;
  /** what a resumed pause was answered, by whom and where (pause-answer.tsx `PauseAnswer`) */
  pauseAnswer?: Child | null;
  /** a decision is recorded for the open pause and waits for a worker to apply it */
  pauseDecided?: boolean;
  /** A page of the run's idempotency entries, and the link to the next (null: none) and back to the first (null: this is it). */
  idempotency: IdempotencyEntry[];
  idempotencyNext: string | null;
  idempotencyFirst: string | null;
  /** Pauses two writers claimed (absent where claims are not arbitrated: a local store). */
  conflicts?: {
    checkpointId: string;
    winnerWriterId: string;
    loserWriterId: string;
    source: string;
    at: string;
    sideEffects: string[];
  }[];
  /** Takeovers of the run by another machine (its writer not heard from for the takeover delay). */
  takeovers?: {
    fromSeq: number;
    winnerWriterId: string;
    loserWriterId: string;
    loserLastContactAt: string | null;
    at: string;
  }[];
  quarantined: { id: number | string; code: string; reason: string; writerId: string; receivedAt: string }[];
  diff: { a: number; b: number; result: StateDiff | null; error?: string };
  /** The decoded state of row `diff.b`. */
  state: Record<string, Json> | null;
  /** the run this one was forked from (its fork_origin row; `seq`: of the row it was forked at, null when unknown here) */
  forkOf: { executionId: string; checkpointId: string; step: string; seq?: number | null } | null;
  /** runs forked from this one (absent: this source does not list them) */
  forks?: { executionId: string; checkpointId: string }[];
  /** the decisions of the run's pauses and the approve/decline form (approvals.tsx; absent: none to show) */
  approvals?: Child | null;
  /**
   * What a source says of a cancelled run's cancel beyond its reason (the plane: who cancelled it, the pause it
   * closed, the writer it stopped); absent: the marker's writer and time.
   */
  cancelDetail?: Child | null;
}

/** A cancelled run: why (the reason given, as text), and who ended it where (`detail`, else the marker's writer and time). */
const Cancelled: FC<{ execution: RunPageProps['execution']; detail?: Child | null }> = ({ execution: e, detail }) => {
  const reason = e.cancelReason?.trim() ? e.cancelReason : null;
  return (
    <section aria-labelledby="cancel-h" class="card" data-testid="cancelled">
      <h2 id="cancel-h">
        Cancelled <Badge status="cancelled" />
      </h2>
      <p data-testid="cancel-reason-shown">
        Reason:{' '}
        {reason === null ? (
          <span class="muted">none was given</span>
        ) : (
          <q class="reason" data-testid="cancel-reason">
            {pageText(reason)}
          </q>
        )}
      </p>
      {detail ?? (
        <p class="muted">
          Cancelled by writer <Writer id={e.writerId} /> at <Time iso={e.updatedAt} />: its cancel marker,{' '}
          <a href={`/runs/${encodeURIComponent(e.executionId)}#seq-${e.lastSeq}`}>#{e.lastSeq}</a>, ends the run&rsquo;s
          history; a runner stops at its next step, and resume refuses it.
        </p>
      )}
    </section>
  );
};

export const RunPage: FC<RunPageProps> = (p) => {
  const id = p.execution.executionId;
  const hold = holdOf(p.execution, { lostAtPlane: !!p.execution.lostAtPlane });
  const status = statusWord(p.execution.status, hold);
  return (
    <Layout title={id} live={p.live}>
      <LiveRegion name="summary">
        <h1>
          Run <span class="mono">{id}</span> <Badge status={status} />{' '}
          {!p.execution.complete && <Incomplete holeCount={p.execution.holeCount} />}
        </h1>
        <p class="muted">
          {num(p.execution.rowCount)} rows · last writer <Writer id={p.execution.writerId} /> · updated{' '}
          <Time iso={p.execution.updatedAt} relative />
        </p>
        {hold && (
          <p class={hold.kind === 'held' ? 'muted' : 'error'} data-testid="hold">
            {holdWords(hold, (iso) => (
              <Time iso={iso} />
            ))}
          </p>
        )}
        {p.execution.lostAtPlane && <LostNotice executionId={id} lost={p.execution.lostAtPlane} />}
        {p.usage && p.usage.calls > 0 && (
          <p class="muted" data-testid="usage">
            Tokens: {num(p.usage.inputTokens)} in ({num(p.usage.cachedInputTokens)} cached) ·{' '}
            {num(p.usage.outputTokens)} out · {num(p.usage.calls)} model call{p.usage.calls === 1 ? '' : 's'} (
            {Object.entries(p.usage.models)
              .map(([m, n]) => `${m} ×${num(n)}`)
              .join(', ')}
            )
            {p.prices && (
              <>
                {' '}
                · Cost:{' '}
                <span data-testid="cost">
                  <CostText usage={p.usage} prices={p.prices} />
                </span>
              </>
            )}
          </p>
        )}
      </LiveRegion>
      <LiveToggle live={p.live} href={(on) => p.here({ live: on ? '1' : null })} />
      <Later
        slot={p.slot}
        rest={async () => <RestOfRunPage {...(await p.rest())} execution={p.execution} here={p.here} live={p.live} />}
      />
    </Layout>
  );
};

/** A run's page after its summary: what `RunPage` sends once it is read. */
const RestOfRunPage: FC<RunPageRest & Pick<RunPageProps, 'execution' | 'here' | 'live'>> = (p) => {
  const id = p.execution.executionId;
  const hold = holdOf(p.execution, { lostAtPlane: !!p.execution.lostAtPlane });
  const status = statusWord(p.execution.status, hold);
  const stand = p.pause && pauseStand(p.pause, p.pauseDecided === true);
  return (
    <>
      <LiveRegion name="status">
        {p.forkOf && (
          <p class="fork">
            Forked from{' '}
            <a
              href={
                typeof p.forkOf.seq === 'number'
                  ? rowHref(p.forkOf.executionId, p.forkOf.seq)
                  : `/runs/${encodeURIComponent(p.forkOf.executionId)}#row-${p.forkOf.checkpointId}`
              }
            >
              {p.forkOf.executionId}
            </a>{' '}
            at its {p.forkOf.step} row
          </p>
        )}
        {p.forks && p.forks.length > 0 && (
          <p class="fork">
            Forks of this run:{' '}
            {p.forks.map((f, i) => (
              <>
                {i > 0 && ', '}
                <a href={`/runs/${encodeURIComponent(f.executionId)}`}>{f.executionId}</a>
              </>
            ))}
          </p>
        )}

        {p.execution.error && (
          <section aria-labelledby="failed-h" class="card failed">
            <h2 id="failed-h" class="error">
              Failed: {p.execution.error.code}
            </h2>
            <pre>{pageText(p.execution.error.message)}</pre>
          </section>
        )}

        {p.execution.status === 'cancelled' && <Cancelled execution={p.execution} detail={p.cancelDetail} />}

        {p.holes.length > 0 && (
          <section aria-labelledby="holes-h" class="card" data-testid="holes">
            <h2 id="holes-h" class="error">
              Incomplete:{' '}
              {p.holes.every((h) => h.code === 'missing')
                ? 'rows of this run never reached the plane'
                : `the plane refused ${refusedRows(p.holes)} of this run${p.holes.some((h) => h.code === 'missing') ? ', and rows of it never reached the plane' : ''}`}
            </h2>
            <p>
              The rows after a refused or missing one are deltas on a row this plane does not hold, so their state
              cannot be shown from here and the run cannot be restored from this plane. The writer keeps the whole run
              locally (a row still on its way arrives with its next sync).
            </p>
            <ul>
              {p.holes.map((h) => (
                <li>
                  <a href={rowHref(id, h.seq)}>seq {h.seq}</a>: <span class="mono">{h.code}</span> — {h.reason} (from{' '}
                  <Writer id={h.writerId} />, <Time iso={h.at} relative />)
                </li>
              ))}
            </ul>
          </section>
        )}

        {p.pause && (
          <section aria-labelledby="pause-h" class="card">
            <h2 id="pause-h">
              Pause: {p.pause.pending.reason} <Badge status={stand === 'open' ? 'paused' : stand!} />
            </h2>
            <p data-testid="pause-stand">{PAUSE_WORDS[stand!]}</p>
            <p class="muted">
              at{' '}
              <span class="mono">
                <Id id={p.pause.pending.nodeId} />
              </span>{' '}
              (<Id id={p.pause.pending.agentPath} />)
              {p.pause.claimedBy && (
                <>
                  {' '}
                  · claimed by <Writer id={p.pause.claimedBy} />
                  {p.pause.claim?.state === 'held' && (
                    <>
                      {' '}
                      (held since <Time iso={p.pause.claim.claimedAt} relative />: its holder has not reported resuming
                      yet)
                    </>
                  )}
                </>
              )}
            </p>
            {p.pause.graph ? (
              <>
                <p>
                  Waiting at a LangGraph <span class="mono">interrupt()</span>: the graph answers it when it is invoked
                  again with <span class="mono">{'new Command({ resume })'}</span>. Its value:
                </p>
                <pre data-testid="interrupt-value">{json(p.pause.pending.context)}</pre>
              </>
            ) : (
              <>
                <p>Context frozen at the pause:</p>
                <pre>{json(p.pause.pending.context)}</pre>
              </>
            )}
            {p.pauseAnswer}
          </section>
        )}
      </LiveRegion>

      {p.approvals}

      <LiveRegion name="takeovers and claim conflicts">
        {(p.takeovers?.length ?? 0) > 0 && (
          <section aria-labelledby="takeovers-h" data-testid="takeovers">
            <h2 id="takeovers-h">Taken over</h2>
            <ul>
              {p.takeovers!.map((t) => (
                <li>
                  after seq {t.fromSeq}, by <Writer id={t.winnerWriterId} /> from <Writer id={t.loserWriterId} /> (
                  <Time iso={t.at} relative />; last heard from <Time iso={t.loserLastContactAt} relative />
                  ): rows of the first writer after that seq are refused
                </li>
              ))}
            </ul>
          </section>
        )}

        {p.conflicts && p.conflicts.length > 0 && (
          <section aria-labelledby="conflicts-h">
            <h2 id="conflicts-h" class="error">
              Claim conflicts
            </h2>
            <ul>
              {p.conflicts.map((c) => (
                <li>
                  pause <span class="mono">{c.checkpointId}</span> won by <Writer id={c.winnerWriterId} />, also claimed
                  by <Writer id={c.loserWriterId} /> ({c.source}, <Time iso={c.at} relative />)
                  {c.sideEffects.length > 0 && (
                    <div class="error" data-testid="double-effects">
                      Both writers recorded these side effects, so each may have run them (a charge made twice, an
                      e-mail sent twice): check them outside waymark:{' '}
                      {c.sideEffects.map((k, i) => (
                        <>
                          {i > 0 && ', '}
                          <span class="mono">{k}</span>
                        </>
                      ))}
                    </div>
                  )}
                </li>
              ))}
            </ul>
          </section>
        )}
      </LiveRegion>

      <section aria-labelledby="timeline-h">
        <h2 id="timeline-h">Timeline</h2>
        <TimelineForms
          executionId={id}
          lastSeq={p.execution.lastSeq}
          filter={p.filter}
          agentPaths={p.agentPaths}
          live={p.live}
          unfiltered={p.filter.step || p.filter.agent ? p.here({ step: null, agent: null }, '#timeline-h') : null}
        />
        <LiveRegion name="timeline">
          <Timeline {...p.timeline} executionId={id} execution={{ ...p.execution, status }} here={p.here} />
        </LiveRegion>
      </section>

      <section aria-labelledby="diff-h">
        <h2 id="diff-h">State diff</h2>
        <form class="filters" method="get" action={`/runs/${encodeURIComponent(id)}`}>
          <label>
            From seq
            <input type="number" name="a" min="0" value={String(p.diff.a)} />
          </label>
          <label>
            To seq
            <input type="number" name="b" min="0" value={String(p.diff.b)} />
          </label>
          <button type="submit">Show diff</button>
        </form>
        <LiveRegion name="state diff">
          {p.diff.error && <p class="error">{p.diff.error}</p>}
          {p.diff.result && <DiffView executionId={id} a={p.diff.a} b={p.diff.b} result={p.diff.result} />}
        </LiveRegion>
      </section>

      <LiveRegion name="state">{p.state && <StateTail executionId={id} seq={p.diff.b} state={p.state} />}</LiveRegion>

      <LiveRegion name="idempotency entries">
        <section aria-labelledby="idem-h">
          <h2 id="idem-h">Idempotency entries</h2>
          {p.idempotency.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <>
              <p class="muted">{EFFECT_KEYS_WORDS}</p>
              <Table columns={['Key', 'Result', 'When']}>
                {p.idempotency.map((e) => (
                  <tr>
                    <td>
                      <EffectKey k={e.key} />
                    </td>
                    <td>
                      <EffectResult result={e.result} />
                    </td>
                    <td>
                      <Time iso={e.createdAt} />
                    </td>
                  </tr>
                ))}
              </Table>
            </>
          )}
          <div class="pager">
            {p.idempotencyFirst && <a href={p.idempotencyFirst}>First entries</a>}
            {p.idempotencyNext && <a href={p.idempotencyNext}>More entries →</a>}
          </div>
        </section>
      </LiveRegion>

      <LiveRegion name="quarantine">
        <section aria-labelledby="q-h">
          <h2 id="q-h">Quarantined rows of this run</h2>
          {p.quarantined.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul>
              {p.quarantined.map((q) => (
                <li>
                  <a href={`/quarantine#q-${q.id}`}>#{q.id}</a> {q.code}: {q.reason}{' '}
                  <span class="muted">
                    (<Writer id={q.writerId} />, <Time iso={q.receivedAt} relative />)
                  </span>
                </li>
              ))}
            </ul>
          )}
        </section>
      </LiveRegion>
    </>
  );
};
