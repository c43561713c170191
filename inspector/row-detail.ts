/**
 * What one row of a run's timeline opens to (its own page, `/runs/:id/rows/:seq`: read only when asked, so the run
 * page carries no row's payloads). Read from the rows as the runtime writes them (client/runtime/agent.ts):
 *
 * - a model call's row (`llm_call`) is written *before* the call: the model's reply is the assistant message the
 *   next row of the same agent holds in its state (a tool row of its calls, or the run-end marker), and the call's
 *   usage is recorded in `nodeOutput.usage` of the first row written after it (shared/usage.ts), by agent path and
 *   turn;
 * - a tool row (`tool_call`, `hitl_pause`) holds the arguments in `nodeInput` and the call's id in its state; the
 *   result is the tool message with that id in the next row of the calling agent (a tool that threw: its result
 *   says so, shared/tool-result.ts).
 *
 * Latency is not recorded by the runtime: it is derived, for display only, from the rows' recorded times (the
 * writer's clock): from the call's row to the row that holds its reply or result. It includes writing that row,
 * and a pause's wait for an answer.
 */
import type { Json } from '../shared/json.js';
import type { Checkpoint } from '../shared/rows.js';
import { toolFailureOf } from '../shared/tool-result.js';
import { type UsageRecord, usageOf } from '../shared/usage.js';
import { messageView } from './conversation.js';
import type { InspectorSource, RowHead } from './source.js';

/** How many later rows are looked through for a call's reply or result (a worker's rows come between a tool row and its result). */
const LOOKAHEAD = 200;
/** How many later states are decoded at most to find it. */
const DECODES = 4;
/** How many rows after a model call are read for its usage. */
const USAGE_ROWS = 4;

/** A derived time: from the call's row to row `toSeq` (see the header). */
export interface Latency {
  ms: number;
  toSeq: number;
}

export interface ModelCallDetail {
  kind: 'model';
  /** the assistant message the call answered with, and the row whose state holds it; null: no later row of this agent holds it */
  reply: { message: Json; seq: number } | null;
  /** the call's recorded usage, and the row that records it; null: none was recorded */
  usage: { record: UsageRecord; seq: number } | null;
  latency: Latency | null;
}

export interface ToolCallDetail {
  kind: 'tool';
  name: string;
  callId: string | null;
  args: Json;
  /** its result as the model got it (`error`: the tool threw, and this is its message), and the row that holds it; null: none yet */
  result: { content: string; error: string | null; seq: number } | null;
  latency: Latency | null;
}

export interface RowDetail {
  row: Checkpoint;
  call: ModelCallDetail | ToolCallDetail | null;
}

type State = Record<string, Json>;
const messagesOf = (s: State | null): Json[] => (s && Array.isArray(s.messages) ? s.messages : []);
/** The agent a row belongs to: a tool row's is the agent that called it. */
const agentOf = (agentPath: string) => agentPath.replace(/\/tool:[^/]*$/, '');
const latency = (from: Checkpoint, to: RowHead | undefined): Latency | null =>
  to ? { ms: Math.max(0, Date.parse(to.createdAt) - Date.parse(from.createdAt)), toSeq: to.seq } : null;

/** Row `seq` of the run and what its call did (null: no such row). */
export async function readRowDetail(src: InspectorSource, executionId: string, seq: number): Promise<RowDetail | null> {
  const row = await src.getRow(executionId, seq);
  if (!row) return null;
  if (row.step !== 'llm_call' && row.step !== 'tool_call' && row.step !== 'hitl_pause') return { row, call: null };
  const later = (await src.listRows(executionId, { after: seq, limit: LOOKAHEAD })).items;
  // a state that does not decode here (a hole before it) leaves the reply unknown, not the page broken
  const stateOf = (at: number) => src.stateAt(executionId, at).catch(() => null);
  const own = await stateOf(seq);
  const agent = agentOf(row.agentPath);
  // the rows of the same agent after this one, until the agent is left (its caller writes on): where a reply or result is
  const candidates: RowHead[] = [];
  for (const r of later) {
    const a = agentOf(r.agentPath);
    if (a === agent) {
      if (r.step !== 'hitl_pause') candidates.push(r);
    } else if (!a.startsWith(`${agent}/`)) break;
    if (candidates.length >= DECODES) break;
  }

  if (row.step === 'llm_call') {
    const n = messagesOf(own).length;
    // the reply is the next message of the agent's next row, if that row has one
    let reply: ModelCallDetail['reply'] = null;
    const [next] = candidates;
    const m = next && messagesOf(await stateOf(next.seq))[n];
    if (m !== undefined && messageView(m).role === 'assistant') reply = { message: m, seq: next.seq };
    let usage: ModelCallDetail['usage'] = null;
    for (const r of later.slice(0, USAGE_ROWS)) {
      const full = await src.getRow(executionId, r.seq);
      const record = usageOf(full?.nodeOutput).find((u) => u.agentPath === row.agentPath && u.turn === row.turn);
      if (record) {
        usage = { record, seq: r.seq };
        break;
      }
    }
    const to = later.find((r) => r.seq === (reply?.seq ?? usage?.seq));
    return { row, call: { kind: 'model', reply, usage, latency: latency(row, to) } };
  }

  const name = typeof own?.toolName === 'string' ? own.toolName : row.agentPath.replace(/^.*\/tool:/, '');
  const callId = typeof own?.toolCallId === 'string' ? own.toolCallId : null;
  let result: ToolCallDetail['result'] = null;
  if (callId !== null) {
    for (const r of candidates) {
      const m = messagesOf(await stateOf(r.seq)).find(
        (x) => typeof x === 'object' && x !== null && !Array.isArray(x) && x.role === 'tool' && x.toolCallId === callId,
      ) as { content?: Json } | undefined;
      if (!m) continue;
      const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? null);
      result = { content, error: toolFailureOf(name, content), seq: r.seq };
      break;
    }
  }
  const to = result ? later.find((r) => r.seq === result.seq) : undefined;
  return { row, call: { kind: 'tool', name, callId, args: row.nodeInput, result, latency: latency(row, to) } };
}
