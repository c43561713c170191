/** @jsxImportSource hono/jsx */
/**
 * One row of a run's timeline, its own page (`/runs/:id/rows/:seq`, `rowDetailHref`): a model call's reply (text and
 * tool calls), tokens and latency; a tool call's arguments and result (or error) and latency; any row's payloads,
 * pretty-printed. What it shows is read by row-detail.ts, only when the page is asked for.
 */
import type { FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import type { UsageRecord } from '../shared/usage.js';
import { Conversation } from './conversation.js';
import { Id, json, Layout, num, pretty, duration, Time, Writer } from './layout.js';
import type { Latency, RowDetail } from './row-detail.js';
import { stateHref } from './state-page.js';
import { rowDetailHref, rowHref } from './timeline.js';

/** A call's tokens as recorded: input (cached), output, total, where each was reported. */
export const Tokens: FC<{ u: UsageRecord }> = ({ u }) => {
  const parts: string[] = [];
  if (u.inputTokens !== null)
    parts.push(
      `${num(u.inputTokens)} input${u.cachedInputTokens !== null ? ` (${num(u.cachedInputTokens)} cached)` : ''}`,
    );
  if (u.outputTokens !== null) parts.push(`${num(u.outputTokens)} output`);
  if (u.inputTokens !== null && u.outputTokens !== null) parts.push(`${num(u.inputTokens + u.outputTokens)} total`);
  return (
    <span data-testid="row-tokens">
      {parts.length ? parts.join(' · ') : 'no token counts reported'} · model <span class="mono">{u.model}</span>
      {u.finishReason && ` · finished: ${u.finishReason}`}
    </span>
  );
};

const LatencyLine: FC<{ executionId: string; latency: Latency | null; what: string }> = ({
  executionId,
  latency,
  what,
}) =>
  latency ? (
    <p data-testid="latency">
      Latency: {duration(latency.ms)}{' '}
      <span class="muted">
        (from this row to <a href={rowDetailHref(executionId, latency.toSeq)}>#{latency.toSeq}</a>, the row that holds
        its {what}, by the times the writer recorded them: it includes writing that row)
      </span>
    </p>
  ) : (
    <p class="muted" data-testid="latency">
      Latency: not known (no later row holds its {what})
    </p>
  );

/** A payload of the row, pretty, when it has one. */
const Payload: FC<{ title: string; value: Json | null; testid: string }> = ({ title, value, testid }) =>
  value === null ? null : (
    <>
      <h3>{title}</h3>
      <pre data-testid={testid}>{pretty(value)}</pre>
    </>
  );

export const RowPage: FC<{ executionId: string; detail: RowDetail; lastSeq: number }> = ({
  executionId: id,
  detail: { row, call },
  lastSeq,
}) => (
  <Layout title={`#${row.seq} · ${id}`}>
    <p>
      <a href={rowHref(id, row.seq)}>← Run {id}, at this row</a>
    </p>
    <h1>
      Row #{row.seq} <span class="mono">{row.step}</span> of run <span class="mono">{id}</span>
    </h1>
    <p class="muted">
      <span class="mono">
        <Id id={row.nodeId} />
      </span>{' '}
      ·{' '}
      <span class="mono">
        <Id id={row.agentPath} />
      </span>{' '}
      · turn {row.turn} · <Writer id={row.writerId} /> · <Time iso={row.createdAt} />
    </p>
    <p class="pager">
      {row.seq > 0 && (
        <a href={rowDetailHref(id, row.seq - 1)} rel="prev">
          ← #{row.seq - 1}
        </a>
      )}
      <a href={stateHref(id, row.seq)}>State at this row</a>
      {row.seq < lastSeq && (
        <a href={rowDetailHref(id, row.seq + 1)} rel="next">
          #{row.seq + 1} →
        </a>
      )}
    </p>

    {call?.kind === 'model' && (
      <section aria-labelledby="reply-h" class="card" data-testid="model-call">
        <h2 id="reply-h">Model call</h2>
        <p>
          Tokens:{' '}
          {call.usage ? (
            <Tokens u={call.usage.record} />
          ) : (
            <span class="muted" data-testid="row-tokens">
              none recorded (the model reported no usage)
            </span>
          )}
        </p>
        <LatencyLine executionId={id} latency={call.latency} what="reply" />
        <h3>Reply</h3>
        {call.reply ? (
          <div data-testid="reply">
            <Conversation messages={[call.reply.message]} />
          </div>
        ) : (
          <p class="muted" data-testid="reply">
            No later row of this agent holds the reply: the call has not answered yet, the run ended before it did, or
            (a worker's last reply) it was handed to the calling agent as its tool result.
          </p>
        )}
      </section>
    )}

    {call?.kind === 'tool' && (
      <section aria-labelledby="tool-h" class="card" data-testid="tool-call">
        <h2 id="tool-h">
          Tool call <span class="mono">{call.name}</span>
        </h2>
        {call.callId && <p class="muted mono">call id {call.callId}</p>}
        <LatencyLine executionId={id} latency={call.latency} what="result" />
        <h3>Arguments</h3>
        <pre data-testid="tool-args">{pretty(call.args)}</pre>
        {call.result === null ? (
          <p class="muted" data-testid="tool-result">
            No result yet: no later row of the calling agent holds one.
          </p>
        ) : call.result.error !== null ? (
          <>
            <h3 class="error">Error</h3>
            <pre class="error" data-testid="tool-error">
              {pretty(call.result.error)}
            </pre>
          </>
        ) : (
          <>
            <h3>Result</h3>
            <pre data-testid="tool-result">{pretty(call.result.content)}</pre>
          </>
        )}
      </section>
    )}

    <section aria-labelledby="payload-h">
      <h2 id="payload-h">What the row holds</h2>
      {row.interruptReason && <p>Paused: {row.interruptReason}</p>}
      <Payload title="Input" value={row.nodeInput} testid="node-input" />
      <Payload title="Output" value={row.nodeOutput} testid="node-output" />
      <Payload title="Pause context" value={row.interruptContext} testid="interrupt-context" />
      {row.nodeInput === null && row.nodeOutput === null && row.interruptContext === null && (
        <p class="muted">No input or output: its state is on the state&rsquo;s page.</p>
      )}
      <details class="raw">
        <summary>The row as stored (its state encoded)</summary>
        <pre>{json(row)}</pre>
      </details>
    </section>
  </Layout>
);
