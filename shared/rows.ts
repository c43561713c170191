import { z } from 'zod';
import { LIMITS } from './limits.js';
import { UUIDV7_RE } from './ids.js';
import { jsonProblem, textFault, type Json } from './json.js';
import { CONTROL_CHARACTER } from './text.js';

/** Any JSON value, depth-limited, plain objects only. */
export const JsonValue = z
  .custom<Json>((v) => jsonProblem(v) === null, {
    error: (issue) => `not plain JSON: ${jsonProblem(issue.input) ?? 'invalid'}`,
  })
  // for OpenAPI documents: any JSON value
  .meta({ type: ['object', 'array', 'string', 'number', 'boolean', 'null'], description: 'any JSON value' } as Record<
    string,
    unknown
  >);

/**
 * A JSON object (not an array, not null), kept exactly as sent: `z.record`
 * builds a new object by assignment, which drops a `"__proto__"` key (it sets
 * the prototype instead), so a row's state or a decision's metadata would
 * lose it unseen, and two rows differing only there would hash alike. The
 * record schema still judges it, so each problem is named at its own path.
 */
const JsonRecord = z.record(z.string(), JsonValue);
/** A JSON object (not an array, not null), checked as plain JSON and kept exactly as sent (a `"__proto__"` key included). */
export const JsonObject = z
  .custom<{ [key: string]: Json }>(() => true)
  .superRefine((v, ctx) => {
    const r = JsonRecord.safeParse(v);
    if (!r.success) {
      for (const issue of r.error.issues)
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path as (string | number)[] });
      return;
    }
    // the record schema never sees an own "__proto__" key (assigning it sets the prototype): its value is judged here, as any other key's
    const own = Object.getOwnPropertyDescriptor(v, '__proto__');
    const problem = own ? jsonProblem(own.value) : null;
    if (problem) ctx.addIssue({ code: 'custom', message: `not plain JSON: ${problem}`, path: ['__proto__'] });
  })
  .meta({ type: 'object', description: 'a JSON object' } as Record<string, unknown>);

/** A lowercase UUIDv7 (`UUIDV7_RE`): the ids of rows and events. */
export const Uuidv7 = z.string().regex(UUIDV7_RE, 'must be a lowercase UUIDv7');

/**
 * An id's text: 1 to `max` code points, no control character (shared/text.ts),
 * well-formed Unicode: ids end up in URLs, logs and the UI.
 */
const idText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((v) => !CONTROL_CHARACTER.test(v), 'must not contain control characters')
    .refine((v) => v.isWellFormed(), 'must be well-formed Unicode');

/** Free text (reasons, keys, messages): at most `max` characters, any a database can store (shared/json.ts textFault). */
export const storable = (max: number) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .superRefine((v, ctx) => {
      const fault = textFault(v);
      if (fault) ctx.addIssue({ code: 'custom', message: fault });
    });

/** Not `.` or `..`: a URL names a run by its id in a path segment, and those two are normalised away by every client. */
export const ExecutionId = idText(LIMITS.executionIdLength).refine(
  (v) => v !== '.' && v !== '..',
  "must not be '.' or '..' (no URL path can name it)",
);
/** A writer's id: text of 1 to `LIMITS.writerIdLength` code points, no control character. */
export const WriterId = idText(LIMITS.writerIdLength);
/** A node id (`turn:3`, `turn:3/tool:search`…): text of 1 to `LIMITS.nodeIdLength` code points, no control character. */
export const NodeId = idText(LIMITS.nodeIdLength);
/** An agent path (`agent:NAME/…`): text of 1 to `LIMITS.agentPathLength` code points, no control character. */
export const AgentPath = idText(LIMITS.agentPathLength);
/** An ISO 8601 UTC timestamp (`2026-12-06T18:00:00.000Z`). */
export const IsoTime = z.iso.datetime();

/** `graph_step`: one checkpoint written by a LangGraph graph through `waymark/langgraph` (see client/langgraph/). */
export const Step = z.enum(['llm_call', 'tool_call', 'hitl_pause', 'run_end', 'fork_origin', 'graph_step']);
export type Step = z.infer<typeof Step>;
/** `cancelled`: only on a `run_end` marker written by `cancel` (the run is final, like completed). */
export const Status = z.enum(['completed', 'interrupted', 'failed', 'cancelled']);
export type Status = z.infer<typeof Status>;

/** The tagged snapshot encoding (see codec.ts). */
export const EncodedFull = z.object({
  v: z.literal(1),
  kind: z.literal('full'),
  state: JsonObject,
});
/** A snapshot as the change from the previous row's: messages kept and appended, keys set and unset. */
export const EncodedDelta = z.object({
  v: z.literal(1),
  kind: z.literal('delta'),
  /** seq of the full snapshot this chain starts from */
  base: z.number().int().nonnegative().max(LIMITS.maxSeq),
  /** id of the row this delta applies to (seq - 1 of the same execution) */
  prev: Uuidv7,
  /** messages kept from the previous state */
  keep: z.number().int().nonnegative().max(LIMITS.maxSeq),
  append: z.array(JsonValue),
  set: JsonObject,
  unset: z.array(z.string()),
});
/** A row's encoded snapshot: a full state, or a delta from the previous row's. */
export const EncodedState = z.discriminatedUnion('kind', [EncodedFull, EncodedDelta]);
export type EncodedState = z.infer<typeof EncodedState>;

/** One boundary of a run. `seq` is the order of truth; `createdAt` is informational. */
export const Checkpoint = z
  .object({
    id: Uuidv7,
    executionId: ExecutionId,
    seq: z.number().int().nonnegative().max(LIMITS.maxSeq),
    nodeId: NodeId,
    turn: z.number().int().nonnegative().max(LIMITS.maxSeq),
    step: Step,
    status: Status,
    agentPath: AgentPath,
    parentId: Uuidv7.nullable(),
    state: EncodedState,
    nodeInput: JsonValue.nullable(),
    nodeOutput: JsonValue.nullable(),
    interruptReason: storable(LIMITS.reasonLength).nullable(),
    interruptContext: JsonValue.nullable(),
    createdAt: IsoTime,
    writerId: WriterId,
  })
  .strict();
export type Checkpoint = z.infer<typeof Checkpoint>;

/** The one open pause of a run, read by approvers. */
export const PendingInterrupt = z
  .object({
    executionId: ExecutionId,
    checkpointId: Uuidv7,
    nodeId: NodeId,
    reason: storable(LIMITS.reasonLength).min(1),
    context: JsonValue.nullable(),
    agentPath: AgentPath,
    createdAt: IsoTime,
  })
  .strict();
export type PendingInterrupt = z.infer<typeof PendingInterrupt>;

/** A cached side-effect result, unique by (executionId, key). */
export const IdempotencyEntry = z
  .object({
    executionId: ExecutionId,
    key: storable(LIMITS.idempotencyKeyLength).min(1),
    result: JsonValue.nullable(),
    createdAt: IsoTime,
  })
  .strict();
export type IdempotencyEntry = z.infer<typeof IdempotencyEntry>;

/**
 * A person's answer to a pause: what `resume` takes. Unknown fields are
 * refused, not dropped; `metadata` is any JSON object (a comment goes there).
 */
export const ResumeValue = z
  .object({
    approved: z.boolean(),
    metadata: JsonObject.default({}),
  })
  .strict();
export type ResumeValue = z.infer<typeof ResumeValue>;

/**
 * A decision recorded for one open pause (by a screen, an API call or code),
 * for the application to apply through the claim. At most one per pause
 * (executionId, checkpointId). `source` says where it was recorded: on the
 * plane, or in a local store (and replicated).
 */
export const Decision = z
  .object({
    decisionId: Uuidv7,
    executionId: ExecutionId,
    checkpointId: Uuidv7,
    approved: z.boolean(),
    metadata: JsonObject,
    decidedBy: idText(LIMITS.decidedByLength),
    source: z.enum(['plane', 'local']),
    decidedAt: IsoTime,
  })
  .strict();
export type Decision = z.infer<typeof Decision>;

/**
 * What leaves a store for the plane. Every change that must reach the plane is
 * one event, appended to the outbox in the same transaction as the change.
 * `id` is the dedupe key: a checkpoint event's id is the checkpoint's id.
 */
export const CheckpointEvent = z.object({ kind: z.literal('checkpoint'), id: Uuidv7, row: Checkpoint }).strict();
/** A pause opened: the run's pending row. */
export const InterruptOpenedEvent = z
  .object({ kind: z.literal('interrupt_opened'), id: Uuidv7, row: PendingInterrupt })
  .strict();
/** A pause claimed by a writer (a resume, or a decision worker applying a decision). */
export const InterruptClaimedEvent = z
  .object({
    kind: z.literal('interrupt_claimed'),
    id: Uuidv7,
    executionId: ExecutionId,
    checkpointId: Uuidv7,
    writerId: WriterId,
    claimedAt: IsoTime,
    /** The decision this claim applies, when a decision worker made it (absent: a resume from code). */
    decisionId: Uuidv7.optional(),
  })
  .strict();
/** A pause closed without an answer: its run was cancelled (the pending row removed in the cancel's transaction). */
export const InterruptClosedEvent = z
  .object({
    kind: z.literal('interrupt_closed'),
    id: Uuidv7,
    executionId: ExecutionId,
    checkpointId: Uuidv7,
    writerId: WriterId,
    closedAt: IsoTime,
  })
  .strict();
/** An idempotent side effect's recorded result. */
export const IdempotencyEvent = z
  .object({ kind: z.literal('idempotency'), id: Uuidv7, row: IdempotencyEntry })
  .strict();
/** A decision recorded in a local store (one recorded on the plane is not sent back). */
export const DecisionRecordedEvent = z
  .object({ kind: z.literal('decision_recorded'), id: Uuidv7, row: Decision })
  .strict();
/** A run deleted from a store: the plane deletes its copy too. */
export const ExecutionDeletedEvent = z
  .object({ kind: z.literal('execution_deleted'), id: Uuidv7, executionId: ExecutionId, deletedAt: IsoTime })
  .strict();
/** Any event of the outbox, by its `kind`. */
export const OutboxEvent = z.discriminatedUnion('kind', [
  CheckpointEvent,
  InterruptOpenedEvent,
  InterruptClaimedEvent,
  InterruptClosedEvent,
  IdempotencyEvent,
  DecisionRecordedEvent,
  ExecutionDeletedEvent,
]);
export type OutboxEvent = z.infer<typeof OutboxEvent>;

/** The execution an outbox event is of. */
export const executionOfEvent = (e: OutboxEvent): string => ('row' in e ? e.row.executionId : e.executionId);
/** The `kind` of an outbox event. */
export type OutboxKind = OutboxEvent['kind'];

/** A cancel marker: the `run_end` row a cancel writes (status `cancelled`), which ends the run for good. */
export const isCancelMarker = (row: Pick<Checkpoint, 'step' | 'status'> | null | undefined): boolean =>
  !!row && row.step === 'run_end' && row.status === 'cancelled';

/** The reason a cancel marker gives (null: none given). */
export function cancelReason(marker: Pick<Checkpoint, 'nodeOutput'>): string | null {
  const out = marker.nodeOutput as { reason?: unknown } | null;
  return out && typeof out === 'object' && typeof out.reason === 'string' ? out.reason : null;
}

/**
 * What a cancel marker after `last` (the run's newest row) says, wherever it
 * is written (a store's cancel, the plane's): the fields of the row, but its
 * id, seq, state and writer. The marker belongs to the outermost runner, as
 * completed and failed markers do.
 */
export function cancelMarkerFields(
  last: Pick<Checkpoint, 'id' | 'turn' | 'agentPath'>,
  reason: string | null,
  by?: string,
) {
  return {
    nodeId: 'run_end',
    turn: last.turn,
    step: 'run_end' as const,
    status: 'cancelled' as const,
    agentPath: last.agentPath.split('/')[0],
    parentId: last.id,
    nodeOutput: { reason, ...(by ? { by } : {}) } as { [key: string]: Json },
  };
}
