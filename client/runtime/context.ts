/**
 * The run context, carried by AsyncLocalStorage: which execution a piece of
 * code runs in, which store holds it, where in the agent topology it is, and
 * the answers in scope for the tool invocation being run. Nothing is
 * process-global: two runs in one process never see each other's context.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Json } from '../../shared/json.js';
import type { Checkpointer } from '../checkpointer.js';
import type { RunLease } from './lease.js';

export interface ToolScope {
  toolName: string;
  /** Answers to this invocation's interrupts, in order (one per earlier pause). */
  resumes: Json[];
  /** How many interrupt() calls this invocation has made so far. */
  interrupts: number;
  /** Set when interrupt() asked to pause (even if the tool swallowed the signal). */
  pause: { reason: string; context: Json | null; index: number } | null;
  /** Set when an idempotent side effect could not be kept on record (even if the tool caught the error). */
  escaped: Error | null;
}

/**
 * The run a tool is called in: its execution, store, agent path and lease.
 *
 * @inline
 */
export interface RunContext {
  executionId: string;
  store: Checkpointer;
  agentPath: string;
  tool: ToolScope | null;
  /** The runner's lease: an idempotent side effect starts only once the store confirmed it, and its record names it. */
  lease?: RunLease;
  /** The checkpoint the tool call runs under: an idempotent record after a lost lease is kept only while this row is still the run's. */
  rowId?: string;
}

const storage = new AsyncLocalStorage<RunContext>();

/** The run the calling code runs in (inside a tool's `execute`), or undefined outside any run. */
export function currentRun(): RunContext | undefined {
  return storage.getStore();
}

export function withRun<T>(ctx: RunContext, fn: () => Promise<T>): Promise<T> {
  return storage.run(ctx, fn);
}
