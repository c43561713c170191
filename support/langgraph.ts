/**
 * How a LangGraph thread reads back from the rows and idempotency entries the
 * saver (client/langgraph/) writes: what every room that shows a thread (the
 * local UI, the plane's inspector) needs to know of that format, with no
 * LangGraph package loaded.
 *
 * Glossary
 * - graph row: a checkpoint of a thread, agentPath `langgraph` (a subgraph
 *   namespace's: `langgraph/<ns>`), its `nodeInput` the checkpoint's ids.
 * - write batch: one `putWrites` call, stored as the idempotency entry
 *   `lgw ["<checkpoint id>",<slot>]` of the checkpoint it follows; slots count
 *   0, 1, … in the order the calls were stored. These are LangGraph's pending
 *   writes, not effect results.
 * - interrupt: a write on channel `__interrupt__` (a node called
 *   `interrupt(value)`); `Command({ resume })` answers it with a `__resume__`
 *   write, stored in a later batch.
 */
import { setOwn, startWithin, type Json } from '../shared/json.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../shared/rows.js';
import { LIMITS } from '../shared/limits.js';

/** agentPath of the rows of a thread's root namespace; a subgraph's is `langgraph/<ns>`. */
export const GRAPH_AGENT_PATH = 'langgraph';
/** Prefix of a graph row's node id: `langgraph:<source>`, its checkpoint's source (`input`, `loop`, `update`, …). */
const GRAPH_NODE_PREFIX = 'langgraph:';
/** Prefix of the idempotency keys that hold a checkpoint's pending writes. */
export const GRAPH_WRITE_KEY_PREFIX = 'lgw ';
/** LangGraph's channels of a pause and of its answer (`INTERRUPT`, `RESUME` of @langchain/langgraph-checkpoint). */
const INTERRUPT = '__interrupt__';
const RESUME = '__resume__';

/** What every graph row carries in `nodeInput`. */
export interface GraphRowRef {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
}

/** A value as the saver stores it: its JSON form when it has one, else the serializer's type and bytes (base64). */
export type StoredValue = { j: Json } | { t: string; b: string };

export function isGraphRowRef(v: unknown): v is GraphRowRef {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.thread_id === 'string' &&
    typeof r.checkpoint_ns === 'string' &&
    typeof r.checkpoint_id === 'string' &&
    (r.parent_checkpoint_id === null || typeof r.parent_checkpoint_id === 'string')
  );
}

/** True for an agent path of a graph row (a thread's root or a subgraph namespace). */
export function isGraphAgentPath(agentPath: string | null | undefined): boolean {
  return agentPath === GRAPH_AGENT_PATH || (agentPath?.startsWith(`${GRAPH_AGENT_PATH}/`) ?? false);
}

/** The node id of a graph row whose checkpoint came from `source` (LangGraph's metadata; `checkpoint` when it gave none). */
export function graphNodeId(source: unknown): string {
  return `${GRAPH_NODE_PREFIX}${typeof source === 'string' ? source : 'checkpoint'}`;
}

/** True for the node id of a graph row: a run whose newest row has one is a LangGraph thread's. */
export function isGraphNodeId(nodeId: string | null | undefined): boolean {
  return nodeId?.startsWith(GRAPH_NODE_PREFIX) ?? false;
}

/** The LangGraph checkpoint a row holds, or null when it is not a graph row. */
export function graphCheckpointOf(row: Pick<Checkpoint, 'agentPath' | 'nodeInput'> | null): GraphRowRef | null {
  return row && isGraphAgentPath(row.agentPath) && isGraphRowRef(row.nodeInput) ? row.nodeInput : null;
}

/** The idempotency key of the `slot`th write batch stored for checkpoint `checkpointId`. */
export function graphWriteKey(checkpointId: string, slot: number): string {
  return `${GRAPH_WRITE_KEY_PREFIX}${JSON.stringify([checkpointId, slot])}`;
}

/** What every write-batch key of checkpoint `checkpointId` starts with. */
export function graphWriteKeyStart(checkpointId: string): string {
  return `${GRAPH_WRITE_KEY_PREFIX}${JSON.stringify([checkpointId]).slice(0, -1)},`;
}

/** True for the key of a write batch (a pending write of a thread, not an effect's result). */
export function isGraphWriteKey(key: string): boolean {
  return key.startsWith(GRAPH_WRITE_KEY_PREFIX);
}

/** The JSON a stored value holds; undefined when the serializer kept it as bytes (not readable without LangGraph). */
export function storedJson(v: unknown): Json | undefined {
  if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.hasOwn(v, 'j')) return (v as { j: Json }).j;
  return undefined;
}

interface Batch {
  task_id: string;
  gen: number;
  writes: { channel: string; idx: number; value: unknown }[];
}

function batchOf(result: unknown): Batch | null {
  const b = result as Partial<Batch> | null;
  return b &&
    typeof b === 'object' &&
    typeof b.task_id === 'string' &&
    Number.isSafeInteger(b.gen) &&
    Array.isArray(b.writes)
    ? (b as Batch)
    : null;
}

/**
 * The pause a thread waits at, from its newest checkpoint (`row`) and that
 * checkpoint's write batches (`entries`, any order): its interrupts, when a
 * node interrupted and no `Command({ resume })` was stored after the newest
 * interrupt; null otherwise (running, done, or answered and resuming). As
 * LangGraph reads them, a task's newest interrupt counts (a node that
 * interrupts again after a resume replaces it). Shaped as a store's pause: its
 * reason the interrupt's value when that is text (else `interrupt`), its
 * context the value (the values, when several tasks interrupted; null for a
 * value kept as bytes), opened when the interrupt was stored.
 */
export function graphPause(row: Checkpoint, entries: IdempotencyEntry[]): PendingInterrupt | null {
  const ref = graphCheckpointOf(row);
  if (!ref) return null;
  const batches: { batch: Batch; at: string }[] = [];
  for (const e of entries) {
    const batch = batchOf(e.result);
    if (batch && e.key.startsWith(graphWriteKeyStart(ref.checkpoint_id))) batches.push({ batch, at: e.createdAt });
  }
  batches.sort((a, b) => a.batch.gen - b.batch.gen);
  const byTask = new Map<string, { value: unknown; at: string }>();
  let lastInterrupt = -1;
  let lastResume = -1;
  for (const { batch, at } of batches) {
    for (const w of batch.writes) {
      if (w.channel === INTERRUPT) {
        byTask.set(batch.task_id, { value: w.value, at });
        lastInterrupt = batch.gen;
      } else if (w.channel === RESUME) lastResume = batch.gen;
    }
  }
  // an answer stored after the newest interrupt: the thread is resuming (a node that interrupts again stores a newer one)
  if (byTask.size === 0 || lastResume > lastInterrupt) return null;
  const values = [...byTask.values()].map((i) => interruptValue(storedJson(i.value)));
  const context = values.length === 1 ? values[0] : values;
  return {
    executionId: row.executionId,
    checkpointId: row.id,
    nodeId: row.nodeId,
    reason:
      typeof context === 'string' && context.trim() !== ''
        ? startWithin(context, LIMITS.reasonLength, () => 1)
        : 'interrupt',
    context,
    agentPath: row.agentPath,
    createdAt: [...byTask.values()].map((i) => i.at).sort()[0],
  };
}

/** An interrupt's value: LangGraph stores `{ id, value }` (older versions: the value itself, or a list of them). */
function interruptValue(stored: Json | undefined): Json {
  if (stored === undefined) return null;
  if (typeof stored === 'object' && stored !== null && !Array.isArray(stored) && Object.hasOwn(stored, 'value'))
    return (stored as { value: Json }).value ?? null;
  return stored;
}

/**
 * A graph row's decoded state as a reader wants it: its messages as the
 * messages themselves, not the saver's stored form (`{ j: message }`). Any
 * other state is returned as it is.
 */
export function readableGraphState(state: Record<string, Json>): Record<string, Json> {
  if (!Object.hasOwn(state, 'lg:checkpoint') || !Array.isArray(state.messages)) return state;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(state)) setOwn(out, k, v);
  out.messages = state.messages.map((m) => storedJson(m) ?? m);
  return out;
}
