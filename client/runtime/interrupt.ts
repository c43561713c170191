import { ErrorCode, issueProblems, WaymarkError } from '../../shared/errors.js';
import { jsonProblem, type Json } from '../../shared/json.js';
import { ResumeValue } from '../../shared/rows.js';
import { currentRun } from './context.js';
import { InvalidResume } from '../errors.js';

/**
 * A human's answer to a pause. Carries `approved` and `metadata` (any JSON);
 * unknown fields are refused loudly rather than dropped.
 */
export class Resume {
  readonly approved: boolean;
  readonly metadata: Record<string, Json>;
  constructor(value: { approved: boolean; metadata?: Record<string, Json> }) {
    const plain = plainResume(value);
    if (plain) {
      this.approved = plain.approved;
      this.metadata = plain.metadata;
      return;
    }
    const r = ResumeValue.safeParse(value);
    if (!r.success) {
      throw new InvalidResume(issueProblems(r.error, 'the value'));
    }
    this.approved = r.data.approved;
    this.metadata = r.data.metadata;
  }
  /** The plain value a checkpoint stores: `{ approved, metadata }`. */
  toJSON(): Json {
    return { approved: this.approved, metadata: this.metadata };
  }
  /** A Resume from its stored value (`toJSON`'s), checked like the constructor's. */
  static from(v: Json): Resume {
    return new Resume(v as { approved: boolean; metadata?: Record<string, Json> });
  }
}

/**
 * An answer given as a plain `{ approved, metadata? }` of JSON values, taken
 * without the schema (null for anything else, which ResumeValue then judges
 * and names every problem of). The schema's first use in a fresh process
 * costs milliseconds (zod compiles it), a large part of a resume call; this
 * accepts only what ResumeValue accepts and gives what it gives
 * (test/runtime/resume-value.test.ts holds the two together).
 */
export function plainResume(v: unknown): ResumeValue | null {
  if (
    v === null ||
    typeof v !== 'object' ||
    Object.getPrototypeOf(v) !== Object.prototype ||
    Object.getOwnPropertySymbols(v).length
  )
    return null;
  for (const k of Object.keys(v)) if (k !== 'approved' && k !== 'metadata') return null;
  const { approved, metadata } = v as { approved?: unknown; metadata?: unknown };
  if (typeof approved !== 'boolean') return null;
  if (metadata === undefined) return { approved, metadata: {} };
  // a symbol key is not a JSON key (the schema refuses it; Object.entries would skip it)
  if (
    metadata === null ||
    typeof metadata !== 'object' ||
    Object.getPrototypeOf(metadata) !== Object.prototype ||
    Object.getOwnPropertySymbols(metadata).length
  )
    return null;
  const copy: Record<string, Json> = {};
  for (const [k, m] of Object.entries(metadata)) {
    if (k === '__proto__' || jsonProblem(m) !== null) return null;
    copy[k] = m as Json;
  }
  return { approved, metadata: copy };
}

/** Thrown by `interrupt()` on its first pass; the runtime turns it into a recorded pause. */
export class InterruptSignal extends WaymarkError {
  constructor(
    readonly reason: string,
    readonly context: Json | null,
    readonly index: number,
  ) {
    super(ErrorCode.INTERRUPT_SIGNAL, `paused: ${reason}`);
    this.name = 'InterruptSignal';
  }
}

/**
 * Pause the running tool for a human. On the first pass this records the
 * pause (with `context` frozen as JSON now) and the run returns `paused`; when
 * the run is resumed the tool runs again and this call returns the `Resume`.
 * Each call in one tool invocation is its own pause, answered in order.
 */
export function interrupt(reason: string, context: Json | null = null): Resume {
  const run = currentRun();
  if (!run?.tool) {
    throw new WaymarkError(ErrorCode.NOT_IN_TOOL, 'interrupt() must be called inside a tool of a durable run');
  }
  const scope = run.tool;
  const index = scope.interrupts++;
  if (index < scope.resumes.length) return Resume.from(scope.resumes[index]);
  const problem = jsonProblem(context);
  if (problem) throw new WaymarkError(ErrorCode.INVALID_ROW, `interrupt context is not JSON: ${problem}`);
  const frozen = context === null ? null : (JSON.parse(JSON.stringify(context)) as Json);
  scope.pause ??= { reason, context: frozen, index };
  throw new InterruptSignal(reason, frozen, index);
}
