/**
 * Backend-neutral checks and building of what the store writes: input
 * validation, the row a checkpoint input becomes, a pause and an idempotency
 * entry. Both adapters use these so they cannot drift.
 */
import { z } from 'zod';
import { LIMITS, eventBytes } from '../../shared/limits.js';
import { UUIDV7_RE, uuidv7 } from '../../shared/ids.js';
import { isoTime } from '../../support/time.js';
import { jsonProblem, textProblem, utf8Bytes, type Json } from '../../shared/json.js';
import { encodeState, type CodecCursor, type Encoded } from '../../shared/codec.js';
import {
  AgentPath,
  type Checkpoint,
  ExecutionId,
  IsoTime,
  NodeId,
  Status,
  Step,
  Uuidv7,
  type PendingInterrupt,
} from '../../shared/rows.js';
import type { CheckpointInput, ListOptions } from '../checkpointer.js';
import { CheckpointError, ExecutionGoneError, InvalidRowError } from '../errors.js';
import { jsonOrNull, type ColumnTexts } from './columns.js';
import { ErrorCode } from '../../shared/errors.js';
import { CONTROL_CHARACTER, withinLength } from '../../shared/text.js';
import { integerProblem, oneOfProblem, refuse } from '../../support/validate.js';

/** The schema of a checkpoint input (see `inputShape`). */
const buildInputShape = () =>
  z.object({
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
let inputSchema: ReturnType<typeof buildInputShape> | undefined;

/**
 * The schema of a checkpoint input (exported for the test that holds
 * `surelyValidInput` to it), built the first time it is asked for: the writes
 * of a run pass `surelyValidInput` and never need it, and building it at import
 * cost a fresh process's first `waymark/sqlite` import about a millisecond.
 */
export function inputShape() {
  inputSchema ??= buildInputShape();
  return inputSchema;
}

function fail(message: string, details?: Record<string, unknown>): never {
  throw new InvalidRowError(message, details);
}

const STEPS: ReadonlySet<unknown> = new Set(Step.options);
const STATUSES: ReadonlySet<unknown> = new Set(Status.options);

/** What `idText(max)` of shared/rows.ts accepts. */
const isIdText = (v: unknown, max: number) =>
  typeof v === 'string' && v.length >= 1 && withinLength(v, max) && !CONTROL_CHARACTER.test(v) && v.isWellFormed();
const isIdOrAbsent = (v: unknown, nullable: boolean) =>
  v === undefined || (nullable && v === null) || (typeof v === 'string' && UUIDV7_RE.test(v));

/**
 * True only when `inputShape()` certainly accepts `input`: its rules written out
 * for the inputs writers build (no `createdAt`, a plain `state` object with
 * string keys). False means "ask the schema", which then accepts or names the
 * problem exactly as before. It is 5–8× cheaper than the parse.
 */
export function surelyValidInput(input: CheckpointInput): boolean {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return false;
  const { state, turn, interruptReason: reason } = input;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return false;
  const proto = Object.getPrototypeOf(state);
  // what zod's isPlainObject accepts for sure: no own `constructor` to second-guess, no symbol keys to refuse
  if (
    (proto !== Object.prototype && proto !== null) ||
    Object.hasOwn(state, 'constructor') ||
    Object.getOwnPropertySymbols(state).length
  )
    return false;
  return (
    input.createdAt === undefined &&
    isIdOrAbsent(input.id, false) &&
    isIdOrAbsent(input.prevId, true) &&
    isIdOrAbsent(input.parentId, true) &&
    isIdText(input.executionId, LIMITS.executionIdLength) &&
    input.executionId !== '.' &&
    input.executionId !== '..' &&
    isIdText(input.nodeId, LIMITS.nodeIdLength) &&
    isIdText(input.agentPath, LIMITS.agentPathLength) &&
    typeof turn === 'number' &&
    Number.isInteger(turn) &&
    turn >= 0 &&
    turn <= LIMITS.maxSeq &&
    STEPS.has(input.step) &&
    STATUSES.has(input.status) &&
    (reason === undefined ||
      reason === null ||
      (typeof reason === 'string' && reason.length <= LIMITS.reasonLength && textProblem(reason) === null))
  );
}

/** Validate a checkpoint input before any transaction starts. Throws `InvalidRowError`. */
export function checkInput(input: CheckpointInput): void {
  const r = surelyValidInput(input) ? null : inputShape().safeParse(input);
  if (r && !r.success) {
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

/** A `list` call's options checked before any read: INVALID_OPTIONS names every problem. */
export function checkListOptions(o: ListOptions): void {
  const problems = [
    integerProblem('afterSeq', o.afterSeq, Number.MIN_SAFE_INTEGER),
    integerProblem('beforeSeq', o.beforeSeq, Number.MIN_SAFE_INTEGER),
    integerProblem('limit', o.limit, 1),
    oneOfProblem('order', o.order, ['asc', 'desc']),
    oneOfProblem('step', o.step, Step.options),
  ];
  refuse(
    'list',
    problems.filter((p) => p !== null),
  );
}

/** A fresh run's first write (`prevId: null`) found the execution already has rows. Nothing was written. */
export function executionExists(executionId: string): CheckpointError {
  return new CheckpointError(`execution '${executionId}' already has rows; this write expected a fresh run`, {
    code: ErrorCode.EXECUTION_EXISTS,
    details: { executionId },
  });
}

/**
 * A write's `prevId` against its execution's position (`ex`, null when the
 * execution has no row): 'ok', EXECUTION_EXISTS for a fresh run's write
 * (`prevId: null`) into an execution with rows, or 'lookup' when only the
 * named row can tell (see `checkPrevOwner`).
 */
export function checkPrev(
  input: CheckpointInput,
  ex: { next_seq: number | string; last_id: string } | null,
): 'ok' | 'lookup' {
  if (input.prevId === undefined) return 'ok';
  const has = ex !== null && Number(ex.next_seq) > 0;
  if (input.prevId === null) {
    if (has) throw executionExists(input.executionId);
    return 'ok';
  }
  return has && ex.last_id === input.prevId ? 'ok' : 'lookup';
}

/** The execution of the row `input.prevId` names, as stored (undefined when gone): EXECUTION_GONE unless it is this execution. */
export function checkPrevOwner(input: CheckpointInput, owner: string | undefined): void {
  if (owner !== input.executionId) throw new ExecutionGoneError(input.executionId, input.prevId!);
}

export function checkJson(what: string, v: unknown): void {
  const p = jsonProblem(v);
  if (p) fail(`invalid ${what}: ${p}`);
}

/** A checkpoint built for writing: the row, its serialized columns, its event's size and the cursor after it. */
export interface RowText extends ColumnTexts {
  row: Checkpoint;
  bytes: number;
  cursor: CodecCursor;
}

/** Encode and assemble the row that `input` becomes at `seq`. Throws if the row is too large. */
export function buildRow(input: CheckpointInput, seq: number, prev: CodecCursor | null, writerId: string): RowText {
  const id = input.id ?? uuidv7();
  const enc: Encoded = encodeState(prev, input.state, id, seq);
  // earlier messages were checked when first written; only what this row adds needs checking,
  // value by value exactly as the wire schema checks it (so the plane accepts what the store accepts)
  if (enc.encoded.kind === 'full') checkFresh(enc.encoded.state);
  else {
    const { append, set } = enc.encoded;
    for (let i = 0; i < append.length; i++) {
      const problem = jsonProblem(append[i]);
      if (problem) freshProblem(`append[${i}]`, problem);
    }
    checkFresh(set);
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

/** The new fields of a row's state: each key, then its value, as the wire schema checks them. */
function checkFresh(fields: Record<string, Json>): void {
  for (const k of Object.keys(fields)) {
    const keyProblem = textProblem(k);
    if (keyProblem) fail(`invalid checkpoint: state: ${keyProblem}`, { path: ['state'] });
    const problem = jsonProblem(fields[k]);
    if (problem) freshProblem(k, problem);
  }
}

function freshProblem(where: string, problem: string): never {
  fail(`invalid checkpoint: state.${where}: ${problem.replace(/^\$/, '')}`, { path: ['state'] });
}

/**
 * `eventBytes` of the checkpoint event the drain sends for `row` (`{kind, id,
 * row}`), from the column texts already serialized: the small fields are
 * serialized with the four large ones as `null` (4 bytes each), and each
 * large one's text takes its place. Exact, without a second pass over the state.
 */
function checkpointEventBytes(row: Checkpoint, texts: (string | null)[]): number {
  const skeleton = {
    kind: 'checkpoint',
    id: row.id,
    row: { ...row, state: null, nodeInput: null, nodeOutput: null, interruptContext: null },
  };
  return texts.reduce((n, t) => n + (t === null ? 0 : utf8Bytes(t) - 4), eventBytes(skeleton));
}

let nowMs = -1;
let nowIso = '';

/** `t` (default: now) as the ISO text every row stores; now's text is made once per millisecond. */
export function canonicalTime(t?: string | Date): string {
  if (t !== undefined) return new Date(t).toISOString();
  const ms = Date.now();
  if (ms !== nowMs) {
    nowIso = isoTime(ms);
    nowMs = ms;
  }
  return nowIso;
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

export function checkIdempotencyKey(executionId: string, key: string): void {
  if (!ExecutionId.safeParse(executionId).success) fail('invalid idempotency entry: executionId');
  if (typeof key !== 'string' || key.length === 0 || key.length > LIMITS.idempotencyKeyLength) {
    fail(`invalid idempotency entry: key must be 1..${LIMITS.idempotencyKeyLength} characters`);
  }
  const tp = textProblem(key, 'key');
  if (tp) fail(`invalid idempotency entry: ${tp}`);
}

/** An idempotency entry's event (`bytes`: its size as sent) must fit the row limit, as a checkpoint's does. */
export function checkIdempotencyBytes(key: string, bytes: number): void {
  if (bytes > LIMITS.rowBytes) {
    fail(`idempotency entry '${key}' is ${bytes} bytes (UTF-8, as sent), over the ${LIMITS.rowBytes}-byte row limit`, {
      bytes,
    });
  }
}

/** Validate a restore bundle with the wire schemas before anything is written. */
export function checkBundleRows<T>(schema: z.ZodType<T>, rows: unknown[], what: string): T[] {
  return rows.map((r, i) => {
    const p = schema.safeParse(r);
    if (!p.success) fail(`invalid ${what} #${i} in restore bundle: ${p.error.issues[0].message}`);
    return p.data;
  });
}
