/**
 * The runtime's small helpers, over the types of types.ts: the pause that
 * propagates to the outermost runner, which errors escape a run, store calls
 * wrapped as STORE_FAILED, a run's lease taken and held through the checks
 * before its loop starts, a run's messages (frozen, their tool calls, the
 * state a tool row carries), event emission and usage attachment.
 */
import { deepFreeze, type Json } from '../../shared/json.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { PendingInterrupt } from '../../shared/rows.js';
import type { Checkpointer } from '../checkpointer.js';
import { holderOf, RunLease } from './lease.js';
import type { Message, ToolCall } from '../models/model.js';
import type { Level, RunEvent, RunState } from './types.js';

/** Propagates a recorded pause to the outermost runner. */
export class PauseOutcome extends Error {
  constructor(readonly pending: PendingInterrupt) {
    super('paused');
  }
}

/**
 * Errors that mean the run's record could not be kept: a store failure under a
 * tool, a side effect whose result could not be recorded. They are thrown from
 * run/resume with no failed marker (the run stays resumable from its newest
 * row), but for EFFECT_NOT_RECORDED, which ends the run with one first (left
 * running, recoverRuns would run the effect again on every pass); never shown
 * to the model as a tool result it could answer by calling the tool again.
 */
export const ESCAPES: ReadonlySet<string> = new Set([
  ErrorCode.STORE_FAILED,
  ErrorCode.EFFECT_NOT_RECORDED,
  ErrorCode.EXECUTION_GONE,
  ErrorCode.LEASE_LOST,
  ErrorCode.RUN_CANCELLED,
]);
export const escapes = (e: unknown) => ESCAPES.has((e as { code?: string })?.code ?? '');

/**
 * The store operations of the loop itself. A store refusing what it was given
 * (a WaymarkError: INVALID_ROW, CORRUPT_ROW…) is a run failure like any other;
 * the store failing (a driver or I/O error) is STORE_FAILED, which escapes.
 */
export function kept<T>(op: Promise<T>): Promise<T> {
  return op.catch((e: unknown) => {
    if (e instanceof WaymarkError) throw e;
    throw new WaymarkError(ErrorCode.STORE_FAILED, `the store failed: ${(e as Error)?.message ?? e}`, { cause: e });
  });
}

/** Acquire the lease of `executionId` for a new runner of `store`. */
export async function acquireRun(store: Checkpointer, executionId: string, ttlMs: number): Promise<RunLease> {
  const lease = await kept(store.acquireLease(executionId, { holder: holderOf(store), ttlMs }));
  return new RunLease(store, lease);
}

/** Run the checks between taking a lease and the run's loop; a refusal gives the lease back. */
export async function holding<T>(lease: RunLease, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    await lease.stop();
    throw e;
  }
}

/**
 * The mark (`true` in its state) of a tool row whose tool the agent did not
 * have when the row was written: the model called a name of its own making,
 * and was answered that the tool does not exist. A resume re-enters such a
 * row with the same answer; a tool row without it whose tool is missing now
 * (a redeploy dropped it) is refused TOOL_NOT_FOUND. Rows written before the
 * mark existed have none.
 */
export const TOOL_MISSING = 'toolMissing';

export const NOT_RUN = '[no result: the run was interrupted before this tool ran; it was not run on resume]';

export function freeze<T>(m: T): T {
  return deepFreeze(m);
}

export function emit(level: Level, event: RunEvent): void {
  if (!level.onEvent) return;
  try {
    level.onEvent(event);
  } catch {
    // a listener cannot change the run
  }
}

/** `extra` with the level's pending usage added (as `usage`), or `extra` as it is when none is pending. */
export function withUsage(level: Level, extra: Record<string, Json> | null): Record<string, Json> | null {
  if (!level.usage.length) return extra;
  return { ...(extra ?? {}), usage: level.usage.map((u) => ({ ...u })) as unknown as Json };
}

export function lastToolCalls(messages: readonly Message[]): ToolCall[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant') return m.toolCalls ?? [];
  }
  return [];
}

/**
 * Which call of the last reply a tool row is at: the one with its id. When
 * several calls share the id (a row written before the agent gave each call
 * its own, see distinctCallIds), the one after those already answered: the
 * row's messages hold a result for each call before it. -1: none fits.
 */
export function toolCallIndex(messages: readonly Message[], id: unknown): number {
  const calls = lastToolCalls(messages);
  const matching = calls.flatMap((c, i) => (c.id === id ? [i] : []));
  if (matching.length <= 1) return matching[0] ?? -1;
  let answered = 0;
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) answered++;
  return matching.includes(answered) ? answered : -1;
}

export function stripResumes(state: RunState): RunState {
  const { resumes: _r, ...rest } = state;
  return rest as RunState;
}

export function stripTool(state: RunState): RunState {
  return { messages: state.messages, turn: state.turn };
}
