/** @jsxImportSource hono/jsx */
/** The inspector's pages. Server-rendered; hono/jsx escapes every interpolated value. */
import type { Child, FC } from 'hono/jsx';
import type { Json } from '../../shared/json.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type { UsageTotal } from '../../shared/usage.js';
import type { StateDiff } from './diff.js';

/** `refresh`: reload every so many seconds (a person turns it on with `?live=1`; no script needed). */
export const Layout: FC<{ title: string; nav?: boolean; refresh?: number; children?: Child }> = ({ title, nav = true, refresh, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      {refresh ? <meta http-equiv="refresh" content={String(refresh)} /> : null}
      <title>{`${title} · waymark`}</title>
      <link rel="stylesheet" href="/ui/style.css" />
      <script src="/ui/local-time.js" defer></script>
    </head>
    <body>
      <header>
        <span class="brand">waymark</span>
        {nav && (
          <nav aria-label="main">
            <a href="/">Runs</a>
            <a href="/quarantine">Quarantine</a>
            <a href="/writers">Writers</a>
            <a href="/keys">Keys</a>
          </nav>
        )}
        {nav && (
          <form method="post" action="/logout">
            <button type="submit" class="link">Log out</button>
          </form>
        )}
      </header>
      <main>{children}</main>
    </body>
  </html>
);

const Badge: FC<{ status: string }> = ({ status }) => <span class={`badge s-${status.replace(/\s+/g, '-')}`}>{status}</span>;
const json = (v: Json | unknown) => JSON.stringify(v, null, 2);
const ago = (iso: string | null) => {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 90 ? `${s}s ago` : s < 5400 ? `${Math.round(s / 60)}m ago` : s < 129600 ? `${Math.round(s / 3600)}h ago` : `${Math.round(s / 86400)}d ago`;
};

/**
 * A time as UTC text (what a page without scripts shows), marked for
 * /ui/local-time.js to rewrite in the reader's zone; UTC stays on hover.
 */
export const Time: FC<{ iso: string | null; relative?: boolean }> = ({ iso, relative }) => {
  if (!iso) return <span>never</span>;
  const utc = `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
  return (
    <time datetime={iso} title={utc} data-local={relative ? 'relative' : 'absolute'}>
      {relative ? ago(iso) : utc}
    </time>
  );
};

/** Milliseconds as a person reads a duration. */
export const duration = (ms: number) =>
  ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : ms < 90_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 5_400_000 ? `${Math.round(ms / 60_000)} min` : `${(ms / 3_600_000).toFixed(1)} h`;

/** A long id shortened for narrow cells, the full value on hover and for copying. */
export const ShortId: FC<{ id: string | null; max?: number }> = ({ id, max = 24 }) => {
  if (!id) return <span class="muted">—</span>;
  if (id.length <= max) return <span class="mono">{id}</span>;
  return (
    <span class="mono" title={id}>
      {`${id.slice(0, max - 9)}…${id.slice(-8)}`}
    </span>
  );
};

/** A link that turns automatic refresh on or off for the page it is on. */
const LiveToggle: FC<{ href: (live: boolean) => string; live: boolean }> = ({ href, live }) => (
  <p class="live muted">
    {live ? (
      <>
        Refreshing every 5 s · <a href={href(false)}>stop</a>
      </>
    ) : (
      <a href={href(true)}>Refresh every 5 s</a>
    )}
  </p>
);

export const NotFoundPage: FC<{ what: string }> = ({ what }) => (
  <Layout title="Not found">
    <h1>Not found</h1>
    <p>{what}</p>
    <p>
      <a href="/">Back to the runs</a>
    </p>
  </Layout>
);

export const LoginPage: FC<{ error?: string; next: string }> = ({ error, next }) => (
  <Layout title="Log in" nav={false}>
    <div class="login">
      <h1>Log in to the inspector</h1>
      <p class="muted">Paste an API key with the <code>read</code> scope. It is exchanged for a session cookie and not kept in the page.</p>
      {error && <p class="error" role="alert">{error}</p>}
      <form method="post" action="/login">
        <input type="hidden" name="next" value={next} />
        <label>
          API key
          <input type="password" name="key" autocomplete="off" required autofocus />
        </label>
        <button type="submit">Log in</button>
      </form>
    </div>
  </Layout>
);

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
  complete: boolean;
  holeCount: number;
  claimConflicts: number;
  /** first and newest rows' times by the writer's clock */
  startedAt: string | null;
  lastWriteAt: string | null;
  /** model usage summed over the run's rows (null: none reported) */
  usage?: UsageTotal | null;
}

/** Said wherever a run is shown whose copy on the plane has holes. */
const Incomplete: FC<{ holeCount: number }> = ({ holeCount }) => (
  <span class="badge s-failed" data-testid="incomplete" title={`${holeCount} row(s) of this run were refused by the plane: its copy here is incomplete`}>
    incomplete
  </span>
);

export interface RunsFilters {
  status?: string;
  writer?: string;
  q?: string;
  /** only runs updated within this window: '1h', '24h', '7d' */
  since?: string;
}

export const SINCE_WINDOWS: Record<string, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };

export const RunsPage: FC<{ items: RunItem[]; next: string | null; first: boolean; live: boolean; filters: RunsFilters; query: (cursor: string | null, live?: boolean) => string }> = ({
  items,
  next,
  first,
  live,
  filters,
  query,
}) => (
  <Layout title="Runs" refresh={live ? 5 : undefined}>
    <h1>Runs</h1>
    <form class="filters" method="get" action="/" role="search">
      <label>
        Execution id
        <input type="search" name="q" value={filters.q ?? ''} placeholder="starts with…" />
      </label>
      <label>
        Status
        <select name="status">
          {['', 'running', 'paused', 'completed', 'failed', 'cancelled'].map((s) => (
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
    <p class="muted">"running" means no end marker yet: still running, or crashed without a marker.</p>
    <div class="table-wrap">
      <table class="runs">
        <thead>
          <tr>
            <th>Execution</th>
            <th>Status</th>
            <th>Agent</th>
            <th class="wide-only">Writer</th>
            <th class="wide-only">Started</th>
            <th class="wide-only">Duration</th>
            <th>Last update</th>
            <th class="wide-only">Rows</th>
            <th class="wide-only">Last node</th>
            <th class="wide-only">Tokens</th>
          </tr>
        </thead>
        <tbody>
          {items.map((r) => (
            <tr>
              <td class="mono">
                <a href={`/runs/${encodeURIComponent(r.executionId)}`} title={r.executionId}>
                  {r.executionId.length > 40 ? `${r.executionId.slice(0, 31)}…${r.executionId.slice(-8)}` : r.executionId}
                </a>
              </td>
              <td>
                <Badge status={r.status} /> {!r.complete && <Incomplete holeCount={r.holeCount} />}
                {r.claimConflicts > 0 && (
                  <span class="badge s-failed" data-testid="conflicted" title="two writers answered one pause of this run: see its page">
                    claim conflict
                  </span>
                )}
                {r.error && (
                  <div class="why error" title={r.error.message}>
                    {r.error.code}: {clip(r.error.message, 80)}
                  </div>
                )}
              </td>
              <td class="mono" data-testid="agent" title={r.agent ?? "the run's first row has not arrived"}>
                {r.agent ?? ''}
              </td>
              <td class="wide-only">
                <ShortId id={r.writerId} />
              </td>
              <td class="wide-only">
                <Time iso={r.startedAt ?? r.createdAt} />
              </td>
              <td class="wide-only">{r.startedAt && r.lastWriteAt ? duration(Date.parse(r.lastWriteAt) - Date.parse(r.startedAt)) : '—'}</td>
              <td>
                <Time iso={r.updatedAt} relative />
              </td>
              <td class="wide-only">{r.rowCount}</td>
              <td class="mono wide-only">{r.lastNodeId ?? ''}</td>
              <td class="wide-only" data-testid="tokens" title={r.usage ? `${r.usage.inputTokens} input (${r.usage.cachedInputTokens} cached), ${r.usage.outputTokens} output, ${r.usage.calls} model calls` : 'no model usage reported'}>
                {r.usage ? `${r.usage.inputTokens} in / ${r.usage.outputTokens} out` : ''}
              </td>
            </tr>
          ))}
          {items.length === 0 && (
            <tr>
              <td colspan={10} class="muted">
                No runs match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
    <div class="pager">
      {!first && <a href={query(null, live)}>First page</a>}
      {next && (
        <a href={query(next, live)} rel="next">
          Next page →
        </a>
      )}
    </div>
  </Layout>
);

/**
 * What a row's badge may claim. A model-call or tool row is written *before* the
 * call, so its stored status says the boundary was recorded, not that the call
 * worked: the outcome is what came next (a later row: done; the failed run-end
 * marker right after it: failed; nothing after it: in progress or crashed).
 */
export function rowOutcome(r: Checkpoint, next: Checkpoint | undefined, execution: { status: string; lastSeq: number }): string {
  if (r.step === 'run_end' || r.step === 'hitl_pause') return r.status;
  const failedNext = next ? next.step === 'run_end' && next.status === 'failed' : r.seq + 1 === execution.lastSeq && execution.status === 'failed';
  if (failedNext) return 'failed';
  // a step the run was cancelled after (or during): it did not go on
  if (next ? next.step === 'run_end' && next.status === 'cancelled' : r.seq + 1 === execution.lastSeq && execution.status === 'cancelled') return 'cancelled';
  if (r.seq < execution.lastSeq) return 'done';
  return execution.status === 'running' ? 'in progress' : r.status;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Text that is JSON shown pretty; anything else as it is. */
const prettyText = (text: string) => {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return json(JSON.parse(t));
    } catch {
      // not JSON after all
    }
  }
  return text;
};

/** A run's messages as a conversation: who said what, tool calls with their arguments, tool results. Raw JSON one click away. */
export const Conversation: FC<{ messages: Json[] }> = ({ messages }) => (
  <ol class="conversation">
    {messages.map((raw, i) => {
      const m = (raw ?? {}) as { role?: string; content?: unknown; toolCalls?: { id?: string; name?: string; arguments?: Json }[]; name?: string; toolCallId?: string };
      const role = typeof m.role === 'string' ? m.role : 'message';
      return (
        <li class={`msg msg-${role.replace(/[^a-z]/g, '')}`} id={`msg-${i}`}>
          <div class="msg-role">
            {role === 'tool' ? (
              <>
                tool result <span class="mono">{m.name ?? ''}</span>
              </>
            ) : (
              role
            )}
          </div>
          {typeof m.content === 'string' && m.content !== '' && <pre class="msg-text">{role === 'tool' ? prettyText(m.content) : m.content}</pre>}
          {m.content !== undefined && m.content !== null && typeof m.content !== 'string' && <pre class="msg-text">{json(m.content)}</pre>}
          {Array.isArray(m.toolCalls) &&
            m.toolCalls.map((c) => (
              <div class="tool-call">
                calls <strong class="mono">{c.name ?? '?'}</strong>
                <pre>{typeof c.arguments === 'string' ? prettyText(c.arguments) : json(c.arguments ?? null)}</pre>
              </div>
            ))}
          <details class="raw">
            <summary>raw</summary>
            <pre>{json(raw)}</pre>
          </details>
        </li>
      );
    })}
  </ol>
);

/** How deep an agent path is nested (a supervisor's worker is one level in). */
const depth = (agentPath: string) => Math.min(6, agentPath.split('/').length - 1);

export interface RunPageProps {
  execution: { executionId: string; status: string; rowCount: number; lastSeq: number; writerId: string | null; updatedAt: string; error: { code: string; message: string } | null; complete: boolean; holeCount: number };
  holes: { seq: number; code: string; reason: string; writerId: string; at: string }[];
  rows: Checkpoint[];
  next: string | null;
  pageQuery: (cursor: string | null) => string;
  pause: {
    pending: PendingInterrupt;
    state: string;
    claimedBy: string | null;
    claimedAt: string | null;
    claim: { state: 'held' | 'applied'; claimedAt: string } | null;
  } | null;
  idempotency: IdempotencyEntry[];
  conflicts: { checkpointId: string; winnerWriterId: string; loserWriterId: string; source: string; at: string; sideEffects: string[] }[];
  /** Takeovers of the run by another machine (its writer not heard from for the takeover delay). */
  takeovers?: { fromSeq: number; winnerWriterId: string; loserWriterId: string; loserLastContactAt: string | null; at: string }[];
  quarantined: { id: number; code: string; reason: string; writerId: string; receivedAt: string; rowId: string | null }[];
  diff: { a: number; b: number; result: StateDiff | null; error?: string };
  /** The decoded state of row `diff.b`. */
  state: Record<string, Json> | null;
  live: boolean;
  /** a cursor is in the URL: this is not the first page of rows */
  paged: boolean;
  /** the run this one was forked from (its fork_origin row) */
  forkOf: { executionId: string; checkpointId: string; step: string } | null;
  /** runs forked from this one */
  forks: { executionId: string; checkpointId: string }[];
  /** model usage summed over all rows of the run */
  usage?: UsageTotal;
}

export const RunPage: FC<RunPageProps> = (p) => {
  const id = p.execution.executionId;
  return (
    <Layout title={id} refresh={p.live ? 5 : undefined}>
      <h1>
        Run <span class="mono">{id}</span> <Badge status={p.execution.status} /> {!p.execution.complete && <Incomplete holeCount={p.execution.holeCount} />}
      </h1>
      <p class="muted">
        {p.execution.rowCount} rows · last writer <ShortId id={p.execution.writerId} /> · updated <Time iso={p.execution.updatedAt} relative />
      </p>
      {p.usage && p.usage.calls > 0 && (
        <p class="muted" data-testid="usage">
          Tokens: {p.usage.inputTokens} in ({p.usage.cachedInputTokens} cached) · {p.usage.outputTokens} out · {p.usage.calls} model call{p.usage.calls === 1 ? '' : 's'} (
          {Object.entries(p.usage.models).map(([m, n]) => `${m} ×${n}`).join(', ')})
        </p>
      )}
      <LiveToggle live={p.live} href={(on) => `/runs/${encodeURIComponent(id)}${on ? '?live=1' : ''}`} />
      {p.forkOf && (
        <p class="fork">
          Forked from <a href={`/runs/${encodeURIComponent(p.forkOf.executionId)}#row-${p.forkOf.checkpointId}`}>{p.forkOf.executionId}</a> at its {p.forkOf.step} row
        </p>
      )}
      {p.forks.length > 0 && (
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
          <pre>{p.execution.error.message}</pre>
        </section>
      )}

      {p.holes.length > 0 && (
        <section aria-labelledby="holes-h" class="card" data-testid="holes">
          <h2 id="holes-h" class="error">
            Incomplete: the plane refused {p.holes.length === 1 ? 'a row' : `${p.holes.length} rows`} of this run
          </h2>
          <p>
            The rows after a refused one are deltas on a row this plane does not hold, so their state cannot be shown from here and the run cannot
            be restored from this plane. The writer keeps the whole run locally.
          </p>
          <ul>
            {p.holes.map((h) => (
              <li>
                seq {h.seq}: <span class="mono">{h.code}</span> — {h.reason} (from <span class="mono">{h.writerId}</span>, {ago(h.at)})
              </li>
            ))}
          </ul>
        </section>
      )}

      {p.pause && (
        <section aria-labelledby="pause-h" class="card">
          <h2 id="pause-h">
            Pause: {p.pause.pending.reason} <Badge status={p.pause.state === 'open' ? 'paused' : 'completed'} />
          </h2>
          <p class="muted">
            at <span class="mono">{p.pause.pending.nodeId}</span> ({p.pause.pending.agentPath})
            {p.pause.claimedBy && (
              <>
                {' '}
                · claimed by <span class="mono">{p.pause.claimedBy}</span>
                {p.pause.claim?.state === 'held' && <> (held since {ago(p.pause.claim.claimedAt)}: its holder has not reported resuming yet)</>}
              </>
            )}
          </p>
          <p>Context frozen at the pause:</p>
          <pre>{json(p.pause.pending.context)}</pre>
        </section>
      )}

      {(p.takeovers?.length ?? 0) > 0 && (
        <section aria-labelledby="takeovers-h" data-testid="takeovers">
          <h2 id="takeovers-h">Taken over</h2>
          <ul>
            {p.takeovers!.map((t) => (
              <li>
                after seq {t.fromSeq}, by <span class="mono">{t.winnerWriterId}</span> from <span class="mono">{t.loserWriterId}</span> ({ago(t.at)}; last heard
                from {t.loserLastContactAt ? ago(t.loserLastContactAt) : 'never'}): rows of the first writer after that seq are refused
              </li>
            ))}
          </ul>
        </section>
      )}

      {p.conflicts.length > 0 && (
        <section aria-labelledby="conflicts-h">
          <h2 id="conflicts-h" class="error">
            Claim conflicts
          </h2>
          <ul>
            {p.conflicts.map((c) => (
              <li>
                pause <span class="mono">{c.checkpointId}</span> won by <span class="mono">{c.winnerWriterId}</span>, also claimed by{' '}
                <span class="mono">{c.loserWriterId}</span> ({c.source}, {ago(c.at)})
                {c.sideEffects.length > 0 && (
                  <div class="error" data-testid="double-effects">
                    Both writers recorded these side effects, so each may have run them (a charge made twice, an e-mail sent twice): check them
                    outside waymark:{' '}
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

      <section aria-labelledby="timeline-h">
        <h2 id="timeline-h">Timeline</h2>
        <ol class="timeline">
          {p.rows.map((r, i) => {
            const outcome = rowOutcome(r, p.rows[i + 1], p.execution);
            return (
            <li class={`st-${outcome.replace(/\s+/g, '-')} depth-${depth(r.agentPath)}`} id={`seq-${r.seq}`}>
              <span id={`row-${r.id}`} />
              <div class="row-head">
                <strong>#{r.seq}</strong>
                <span class="mono">{r.nodeId}</span>
                <span>{r.step}</span>
                <Badge status={outcome} />
              </div>
              <div class="row-meta">
                <span class="mono">{r.agentPath}</span>
                <ShortId id={r.writerId} />
                <Time iso={r.createdAt} />
                {i > 0 && <span title="time since the previous row (informational: order is by seq)">+{duration(Date.parse(r.createdAt) - Date.parse(p.rows[i - 1].createdAt))}</span>}
                {r.seq > 0 && <a href={`/runs/${encodeURIComponent(id)}?a=${r.seq - 1}&b=${r.seq}#diff-h`}>diff with previous</a>}
              </div>
              {r.interruptReason && <div class="muted">paused: {r.interruptReason}</div>}
              {outcome === 'failed' && r.step !== 'run_end' && p.execution.error && (
                <div class="error">
                  {r.step === 'llm_call' ? 'the model call' : r.step === 'tool_call' ? 'this step' : 'the next step'} failed: {p.execution.error.code}
                </div>
              )}
            </li>
            );
          })}
        </ol>
        <div class="pager">
          {p.paged && <a href={p.pageQuery(null)}>First rows</a>}
          {p.next && <a href={p.pageQuery(p.next)}>Next rows →</a>}
        </div>
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
        {p.diff.error && <p class="error">{p.diff.error}</p>}
        {p.diff.result && (
          <div class="diff" data-testid="diff">
            <p>
              {p.diff.result.common} messages in common; {p.diff.result.added.length} added
              {p.diff.result.removed.length > 0 && `, ${p.diff.result.removed.length} removed`}; {p.diff.result.changed.length} fields changed.
            </p>
            {p.diff.result.added.map((m) => (
              <pre class="added">{json(m)}</pre>
            ))}
            {p.diff.result.removed.map((m) => (
              <pre class="removed">{json(m)}</pre>
            ))}
            {p.diff.result.changed.length > 0 && (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th>Field</th>
                      <th>Before</th>
                      <th>After</th>
                    </tr>
                  </thead>
                  <tbody>
                    {p.diff.result.changed.map((c) => (
                      <tr>
                        <td class="mono">{c.field}</td>
                        <td class="mono">{c.before === undefined ? '(absent)' : JSON.stringify(c.before)}</td>
                        <td class="mono">{c.after === undefined ? '(absent)' : JSON.stringify(c.after)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </div>
        )}
      </section>

      {p.state && (
        <section aria-labelledby="state-h">
          <h2 id="state-h">State at #{p.diff.b}</h2>
          <details open={Array.isArray(p.state.messages) && p.state.messages.length <= 40}>
            <summary>{Array.isArray(p.state.messages) ? `Conversation: ${p.state.messages.length} messages` : 'no messages'}</summary>
            <Conversation messages={Array.isArray(p.state.messages) ? (p.state.messages as Json[]) : []} />
          </details>
          {Object.keys(p.state).some((k) => k !== 'messages') && (
            <>
              <h3>Other state fields</h3>
              <pre>{json(Object.fromEntries(Object.entries(p.state).filter(([k]) => k !== 'messages')))}</pre>
            </>
          )}
        </section>
      )}

      <section aria-labelledby="idem-h">
        <h2 id="idem-h">Idempotency entries</h2>
        {p.idempotency.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Result</th>
                  <th>When</th>
                </tr>
              </thead>
              <tbody>
                {p.idempotency.map((e) => (
                  <tr>
                    <td class="mono">{e.key}</td>
                    <td class="mono">{JSON.stringify(e.result)}</td>
                    <td>
                      <Time iso={e.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="q-h">
        <h2 id="q-h">Quarantined rows of this run</h2>
        {p.quarantined.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ul>
            {p.quarantined.map((q) => (
              <li>
                <a href={`/quarantine#q-${q.id}`}>#{q.id}</a> {q.code}: {q.reason} <span class="muted">({q.writerId}, {ago(q.receivedAt)})</span>
              </li>
            ))}
          </ul>
        )}
      </section>
    </Layout>
  );
};

export const QuarantinePage: FC<{
  items: { id: number; writerId: string; rowId: string | null; kind: string | null; executionId: string | null; code: string; reason: string; payload: string; truncated: boolean; receivedAt: string }[];
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
    <p class="muted">Each machine or worker that replicates to this project, with the backlog it reported in its last batch.</p>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Writer</th>
            <th>Last contact</th>
            <th>Rows stored</th>
            <th>Refused</th>
            <th>Backlog</th>
            <th>Behind by</th>
            <th>Runs incomplete here</th>
          </tr>
        </thead>
        <tbody>
          {items.map((w) => (
            <tr>
              <td>
                <ShortId id={w.writerId} />
              </td>
              <td>
                <Time iso={w.lastSeen} relative />
              </td>
              <td>{w.rowsAcked}</td>
              <td>{w.rowsRejected}</td>
              <td data-testid="backlog">{w.backlogRows === null ? 'not reported' : `${w.backlogRows} rows (${w.backlogBytes ?? 0} bytes)`}</td>
              <td>{w.oldestPendingAt ? `oldest row waiting since ${ago(w.oldestPendingAt)}` : w.backlogRows ? '—' : 'up to date'}</td>
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
        </tbody>
      </table>
    </div>
  </Layout>
);
