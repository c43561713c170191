/**
 * How LangGraph's checkpoints land on waymark rows (see docs/DECISIONS.md,
 * "LangGraph saver").
 *
 * Glossary
 * - thread: LangGraph's `thread_id`; one thread's root namespace is one
 *   waymark execution whose id is the thread id, so the inspector, the plane
 *   and `restoreFromPlane(store, threadId)` all name it as the user does.
 * - namespace: `checkpoint_ns`; a subgraph namespace is its own execution,
 *   `<thread_id>|<checkpoint_ns>` (LangGraph already joins nested
 *   namespaces with `|`). Every row also carries its thread and namespace in
 *   `nodeInput`, so a thread id that itself contains `|` is told apart.
 * - row id: a waymark row id must be a UUIDv7 and unique; a LangGraph
 *   checkpoint id is a uuid6 chosen by the graph and may repeat across
 *   threads. The row id is derived from (execution, checkpoint id) by SHA-256,
 *   shaped as a v7 UUID, so a lookup by checkpoint id is one `getById`.
 * - channel value: stored once per channel version, as LangGraph's savers do;
 *   a value not in `newVersions` is carried from the parent checkpoint. The
 *   `messages` channel, when it is an array, is the state's `messages` list,
 *   so waymark's codec stores only the new messages of each checkpoint.
 */
import { createHash } from 'node:crypto';
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { WaymarkError, ErrorCode } from '../../shared/errors.js';
import { jsonProblem, type Json } from '../../shared/json.js';
import { CONTROL_CHARACTER, textLength, withinLength } from '../../shared/text.js';
import { LIMITS } from '../../shared/limits.js';
import { GRAPH_AGENT_PATH, isGraphRowRef, type GraphRowRef, type StoredValue } from '../../support/langgraph.js';

/** agentPath of the rows of a thread's root namespace; a subgraph's is `langgraph/<ns>`. */
export const AGENT_PATH = GRAPH_AGENT_PATH;
/** The separator LangGraph itself uses between nested namespaces. */
export const NS_SEPARATOR = '|';
/** What every LangGraph row carries in `nodeInput`. */
export type RowRef = GraphRowRef;

export { isGraphRowRef as isRowRef, type StoredValue };

export function invalid(message: string, problems: string[]): WaymarkError {
  return new WaymarkError(ErrorCode.INVALID_GRAPH_CONFIG, `${message}: ${problems.join('; ')}`, {
    details: { problems },
  });
}

/**
 * The waymark execution id of a LangGraph thread and checkpoint namespace: the thread id, then `|` and the namespace
 * when there is one. INVALID_GRAPH_CONFIG when the pair cannot name an execution.
 */
export function executionIdOf(threadId: string, ns: string): string {
  const id = ns === '' ? threadId : `${threadId}${NS_SEPARATOR}${ns}`;
  const problems: string[] = [];
  if (threadId.length === 0) problems.push('thread_id is empty');
  // the wire contract refuses these as execution ids (a URL path segment cannot name them): say so here, not as INVALID_ROW
  if (id === '.' || id === '..')
    problems.push(`thread_id must not be '.' or '..' (no URL path can name its execution)`);
  if (!withinLength(id, LIMITS.executionIdLength))
    problems.push(
      `thread_id plus checkpoint_ns is ${textLength(id)} characters; a waymark execution id holds at most ${LIMITS.executionIdLength}`,
    );
  if (CONTROL_CHARACTER.test(id)) problems.push('thread_id and checkpoint_ns must not contain control characters');
  if (!id.isWellFormed()) problems.push('thread_id and checkpoint_ns must be well-formed Unicode');
  if (AGENT_PATH.length + 1 + ns.length > LIMITS.agentPathLength)
    problems.push(`checkpoint_ns is longer than ${LIMITS.agentPathLength - AGENT_PATH.length - 1} characters`);
  if (problems.length)
    throw invalid(`cannot store thread ${JSON.stringify(threadId)} namespace ${JSON.stringify(ns)}`, problems);
  return id;
}

export function agentPathOf(ns: string): string {
  return ns === '' ? AGENT_PATH : `${AGENT_PATH}/${ns}`;
}

/** The waymark row id of LangGraph checkpoint `checkpointId` in execution `executionId`. */
export function rowIdOf(executionId: string, checkpointId: string): string {
  const h = createHash('sha256').update(executionId).update('\u0000').update(checkpointId).digest();
  h[6] = 0x70 | (h[6] & 0x0f);
  h[8] = 0x80 | (h[8] & 0x3f);
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

const decoder = new TextDecoder();

/** Serialize with the saver's serde; keep the JSON form when waymark stores it as is. */
export async function storeValue(serde: SerializerProtocol, value: unknown): Promise<StoredValue> {
  const [type, bytes] = await serde.dumpsTyped(value);
  if (type === 'json') {
    const text = typeof bytes === 'string' ? bytes : decoder.decode(bytes);
    try {
      const parsed = JSON.parse(text) as Json;
      if (jsonProblem(parsed) === null) return { j: parsed };
    } catch {
      // not JSON text after all: keep the bytes
    }
  }
  return { t: type, b: Buffer.from(typeof bytes === 'string' ? Buffer.from(bytes) : bytes).toString('base64') };
}

export async function loadValue(serde: SerializerProtocol, stored: Json): Promise<unknown> {
  const s = stored as Record<string, Json>;
  if (s !== null && typeof s === 'object' && 'j' in s) return serde.loadsTyped('json', JSON.stringify(s.j));
  if (s !== null && typeof s === 'object' && typeof s.t === 'string' && typeof s.b === 'string') {
    return serde.loadsTyped(s.t, new Uint8Array(Buffer.from(s.b, 'base64')));
  }
  throw new WaymarkError(ErrorCode.CORRUPT_ROW, 'a stored LangGraph value is neither {j} nor {t, b}');
}

/** A plain JSON copy of a small structure (versions, metadata keys) or a clear error. */
export function plainJson(what: string, v: unknown): Json {
  const text = JSON.stringify(v ?? null);
  const parsed = JSON.parse(text) as Json;
  const problem = jsonProblem(parsed);
  if (problem) throw invalid(`cannot store ${what}`, [problem]);
  return parsed;
}
