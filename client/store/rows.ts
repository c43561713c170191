/**
 * Backend-neutral pieces of the store: input validation, row building and
 * decoding of stored rows. Both adapters use these so they cannot drift.
 */
import { z } from 'zod';
import { LIMITS, eventBytes } from '../../shared/limits.js';
import { uuidv7 } from '../../shared/ids.js';
import { jsonProblem, textProblem, utf8Bytes, type Json } from '../../shared/json.js';
import { encodeState, type ChainRow, type CodecCursor, type Encoded } from '../../shared/codec.js';
import {
  AgentPath,
  Checkpoint,
  ExecutionId,
  IsoTime,
  NodeId,
  Status,
  Step,
  Uuidv7,
  type EncodedState,
  type IdempotencyEntry,
  type PendingInterrupt,
} from '../../shared/rows.js';
import type { CheckpointInput } from '../checkpointer.js';
import { CheckpointError, CorruptRowError, InvalidRowError } from '../errors.js';
import { ErrorCode } from '../../shared/errors.js';

const InputShape = z.object({
  id: Uuidv7.optional(),
  executionId: ExecutionId,
  prevId: Uuidv7.nullable().optional(),
  nodeId: NodeId,
  turn: z.number().int().nonnegative().max(LIMITS.maxSeq),
  step: Step,
  status: Status,
  agentPath: AgentPath,
  parentId: Uuidv7.nullable().optional(),
  state: z.record(z.string(), z.unknown()),
  nodeInput: z.unknown().optional(),
  nodeOutput: z.unknown().optional(),
  interruptReason: z
    .string()
    .max(LIMITS.reasonLength)
    .refine((v) => textProblem(v) === null, 'must be well-formed Unicode without U+0000')
    .nullable()
    .optional(),
  interruptContext: z.unknown().optional(),
  createdAt: IsoTime.optional(),
});

function fail(message: string, details?: Record<string, unknown>): never {
  throw new InvalidRowError(message, details);
}

/** Validate a checkpoint input before any transaction starts. Throws `InvalidRowError`. */
export function checkInput(input: CheckpointInput): void {
  const r = InputShape.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    fail(`invalid checkpoint: ${issue.path.join('.') || '(root)'}: ${issue.message}`, {
      path: issue.path.map(String),
    });
  }
  // the state is checked by buildRow, on the parts the codec writes (a delta's new messages and fields)
  for (const k of ['nodeInput', 'nodeOutput', 'interruptContext'] as const) {
    const v = input[k];
    if (v === undefined || v === null) continue;
    const p = jsonProblem(v);
    if (p) fail(`invalid checkpoint: ${k}: ${p}`, { path: [k] });
  }
}

/** A fresh run's first write (`prevId: null`) found the execution already has rows. Nothing was written. */
export function executionExists(executionId: string): CheckpointError {
  return new CheckpointError(`execution '${executionId}' already has rows; this write expected a fresh run`, {
    code: ErrorCode.EXECUTION_EXISTS,
    details: { executionId },
  });
}

export function checkJson(what: string, v: unknown): void {
  const p = jsonProblem(v);
  if (p) fail(`invalid ${what}: ${p}`);
}

/** Serialized columns of a checkpoint, ready for either backend. */
export interface RowText {
  row: Checkpoint;
  stateText: string;
  nodeInput: string | null;
  nodeOutput: string | null;
  interruptContext: string | null;
  bytes: number;
  cursor: CodecCursor;
}

const jsonOrNull = (v: Json | null | undefined): string | null =>
  v === undefined || v === null ? null : JSON.stringify(v);

/** Encode and assemble the row that `input` becomes at `seq`. Throws if the row is too large. */
export function buildRow(input: CheckpointInput, seq: number, prev: CodecCursor | null, writerId: string): RowText {
  const id = input.id ?? uuidv7();
  const enc: Encoded = encodeState(prev, input.state, id, seq);
  // earlier messages were checked when first written; only what this row adds needs checking,
  // value by value exactly as the wire schema checks it (so the plane accepts what the store accepts)
  const fresh: [string, unknown][] =
    enc.encoded.kind === 'full'
      ? Object.entries(enc.encoded.state)
      : [...enc.encoded.append.map((m, i) => [`append[${i}]`, m] as [string, unknown]), ...Object.entries(enc.encoded.set)];
  for (const [where, value] of fresh) {
    const keyProblem = textProblem(where);
    if (keyProblem) fail(`invalid checkpoint: state: ${keyProblem}`, { path: ['state'] });
    const problem = jsonProblem(value);
    if (problem) fail(`invalid checkpoint: state.${where}: ${problem.replace(/^\$/, '')}`, { path: ['state'] });
  }
  const row: Checkpoint = {
    id,
    executionId: input.executionId,
    seq,
    nodeId: input.nodeId,
    turn: input.turn,
    step: input.step,
    status: input.status,
    agentPath: input.agentPath,
    parentId: input.parentId ?? null,
    state: enc.encoded,
    nodeInput: input.nodeInput ?? null,
    nodeOutput: input.nodeOutput ?? null,
    interruptReason: input.interruptReason ?? null,
    interruptContext: input.interruptContext ?? null,
    createdAt: canonicalTime(input.createdAt),
    writerId,
  };
  const nodeInput = jsonOrNull(row.nodeInput);
  const nodeOutput = jsonOrNull(row.nodeOutput);
  const interruptContext = jsonOrNull(row.interruptContext);
  const bytes = checkpointEventBytes(row, [enc.text, nodeInput, nodeOutput, interruptContext]);
  if (bytes > LIMITS.rowBytes) {
    fail(`checkpoint ${id} is ${bytes} bytes (UTF-8, as sent), over the ${LIMITS.rowBytes}-byte row limit`, { bytes });
  }
  return { row, stateText: enc.text, nodeInput, nodeOutput, interruptContext, bytes, cursor: enc.cursor };
}

/**
 * `eventBytes` of the checkpoint event the drain sends for `row` (`{kind, id,
 * row}`), from the column texts already serialized: the small fields are
 * serialized with the four large ones as `null` (4 bytes each), and each
 * large one's text takes its place. Exact, without a second pass over the state.
 */
function checkpointEventBytes(row: Checkpoint, texts: (string | null)[]): number {
  const skeleton = { kind: 'checkpoint', id: row.id, row: { ...row, state: null, nodeInput: null, nodeOutput: null, interruptContext: null } };
  return texts.reduce((n, t) => n + (t === null ? 0 : utf8Bytes(t) - 4), eventBytes(skeleton));
}

export function canonicalTime(t?: string | Date): string {
  return (t === undefined ? new Date() : new Date(t)).toISOString();
}

/** Columns as both backends store them. */
export interface CheckpointColumns {
  id: string;
  execution_id: string;
  seq: number | string;
  node_id: string;
  turn: number;
  step: string;
  status: string;
  agent_path: string;
  parent_id: string | null;
  state: string;
  node_input: string | null;
  node_output: string | null;
  interrupt_reason: string | null;
  interrupt_context: string | null;
  created_at: string;
  writer_id: string;
}

function parseColumn(rowId: string, column: string, text: string | null): Json | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as Json;
  } catch (e) {
    throw new CorruptRowError(rowId, `column ${column} is not JSON`, e);
  }
}

function parseState(id: string, text: string): EncodedState {
  const state = parseColumn(id, 'state', text) as EncodedState | null;
  if (!state || typeof state !== 'object' || state.v !== 1 || (state.kind !== 'full' && state.kind !== 'delta')) {
    throw new CorruptRowError(id, 'column state is not a tagged snapshot');
  }
  return state;
}

/** The columns a snapshot chain is decoded from. */
export interface ChainColumns {
  id: string;
  seq: number | string;
  state: string;
}

/** A chain row from its three columns: only the state is parsed, and its text length kept. */
export function chainRowFromColumns(c: ChainColumns): ChainRow {
  return { id: c.id, seq: Number(c.seq), state: parseState(c.id, c.state), bytes: c.state.length };
}

/** Map stored columns to a row; a corrupt row is reported with its id, never skipped. */
export function rowFromColumns(c: CheckpointColumns): Checkpoint {
  const state = parseState(c.id, c.state);
  return {
    id: c.id,
    executionId: c.execution_id,
    seq: Number(c.seq),
    nodeId: c.node_id,
    turn: Number(c.turn),
    step: c.step as Checkpoint['step'],
    status: c.status as Checkpoint['status'],
    agentPath: c.agent_path,
    parentId: c.parent_id,
    state,
    nodeInput: parseColumn(c.id, 'node_input', c.node_input),
    nodeOutput: parseColumn(c.id, 'node_output', c.node_output),
    interruptReason: c.interrupt_reason,
    interruptContext: parseColumn(c.id, 'interrupt_context', c.interrupt_context),
    createdAt: c.created_at,
    writerId: c.writer_id,
  };
}

export interface PendingColumns {
  execution_id: string;
  checkpoint_id: string;
  node_id: string;
  reason: string;
  context: string | null;
  agent_path: string;
  created_at: string;
}

export function pendingFromColumns(c: PendingColumns): PendingInterrupt {
  return {
    executionId: c.execution_id,
    checkpointId: c.checkpoint_id,
    nodeId: c.node_id,
    reason: c.reason,
    context: parseColumn(c.checkpoint_id, 'context', c.context),
    agentPath: c.agent_path,
    createdAt: c.created_at,
  };
}

export function pendingFor(row: Checkpoint, reason: string, context: Json | null): PendingInterrupt {
  if (!reason || reason.length > LIMITS.reasonLength) fail('invalid pause: reason must be 1..2048 characters');
  const tp = textProblem(reason, 'reason');
  if (tp) fail(`invalid pause: ${tp}`);
  if (row.status !== 'interrupted') fail('invalid pause: the checkpoint of a pause must have status interrupted');
  checkJson('pause context', context);
  return {
    executionId: row.executionId,
    checkpointId: row.id,
    nodeId: row.nodeId,
    reason,
    context,
    agentPath: row.agentPath,
    createdAt: row.createdAt,
  };
}

export interface IdempotencyColumns {
  execution_id: string;
  key: string;
  result: string | null;
  created_at: string;
}

export function idempotencyFromColumns(c: IdempotencyColumns): IdempotencyEntry {
  return {
    executionId: c.execution_id,
    key: c.key,
    result: parseColumn(`${c.execution_id}/${c.key}`, 'result', c.result),
    createdAt: c.created_at,
  };
}

export function checkIdempotencyKey(executionId: string, key: string): void {
  if (!ExecutionId.safeParse(executionId).success) fail('invalid idempotency entry: executionId');
  if (typeof key !== 'string' || key.length === 0 || key.length > LIMITS.idempotencyKeyLength) {
    fail(`invalid idempotency entry: key must be 1..${LIMITS.idempotencyKeyLength} characters`);
  }
  const tp = textProblem(key, 'key');
  if (tp) fail(`invalid idempotency entry: ${tp}`);
}

/** Validate a restore bundle with the wire schemas before anything is written. */
export function checkBundleRows<T>(schema: z.ZodType<T>, rows: unknown[], what: string): T[] {
  return rows.map((r, i) => {
    const p = schema.safeParse(r);
    if (!p.success) fail(`invalid ${what} #${i} in restore bundle: ${p.error.issues[0].message}`);
    return p.data;
  });
}

/** Per-store cache of the newest row's codec cursor per execution (bounded LRU). */
export class CursorCache {
  private readonly map = new Map<string, CodecCursor>();
  constructor(private readonly max = 512) {}
  get(executionId: string, seq: number, id: string | null): CodecCursor | null {
    const c = this.map.get(executionId);
    if (!c || c.seq !== seq || c.id !== id) return null;
    this.map.delete(executionId);
    this.map.set(executionId, c);
    return c;
  }
  set(executionId: string, cursor: CodecCursor): void {
    this.map.delete(executionId);
    this.map.set(executionId, cursor);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  drop(executionId: string): void {
    this.map.delete(executionId);
  }
  /** The cached cursor of an execution's newest row written or read here, whatever its seq. */
  newest(executionId: string): CodecCursor | null {
    return this.map.get(executionId) ?? null;
  }
  /** The cursor of exactly this row, if cached (no LRU touch). */
  peek(executionId: string, seq: number, id: string): CodecCursor | null {
    const c = this.map.get(executionId);
    return c && c.seq === seq && c.id === id ? c : null;
  }
  /** Remember a decoded cursor unless a newer row of the execution is already cached. */
  offer(executionId: string, cursor: CodecCursor): void {
    const c = this.map.get(executionId);
    if (!c || c.seq < cursor.seq) this.set(executionId, cursor);
  }
}

/** Listeners kicked after a committed write (the drain subscribes here). */
export class WriteSignal {
  private readonly listeners = new Set<() => void>();
  on(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  emit(): void {
    for (const fn of this.listeners) {
      try {
        fn();
      } catch {
        // a listener's failure never fails the write that already committed
      }
    }
  }
}
