/**
 * The agent loop and its re-entry rules.
 *
 * Rows a run writes (one execution id, ordered by seq):
 *   turn:N              llm_call   before the N-th model call
 *   turn:N/tool:NAME    tool_call  before a tool runs, its arguments in nodeInput
 *   turn:N/tool:NAME    hitl_pause when that tool pauses (+ the pending row, one transaction)
 *   run_end             run_end    written by the outermost runner: completed | failed
 *   fork_origin         fork_origin first row of a forked execution
 *
 * Re-entry at the newest row of the agent's own path:
 *   llm_call    → the model is called again with the saved history; no tool re-runs
 *   tool_call   → the tool runs again with its saved arguments (and answers in scope);
 *                 the model is not called; siblings after it are answered "not run"
 *   hitl_pause  → claim the pause (writing a tool_call row with the answer, atomically), then as tool_call
 *   run_end     → completed: AlreadyResumed; cancelled: RunCancelled; failed: stepped over
 *
 * Leases: run, resume and fork acquire the execution's lease before their
 * first write (a resume with a value acquires it in the claim's transaction);
 * every write of the runner is fenced by it, so a runner whose lease another
 * runner took over stops with LeaseLost having written nothing. A live lease
 * of another runner refuses the run with RunInProgress. The marker and a
 * pause release it; any other exit releases it explicitly.
 *
 * Cancel (`store.cancel`): the cancel marker clears the lease holder in its
 * transaction, so the runner's next fenced write or renewal is refused with
 * RunCancelled; it stops at its next step boundary (before a model call, a
 * tool or an idempotent effect) having written nothing more.
 */
import { z } from 'zod';
import { uuidv7 } from '../../shared/ids.js';
import { deepFreeze, storableText, type Json } from '../../shared/json.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Checkpoint, PendingInterrupt } from '../../shared/rows.js';
import type { State } from '../../shared/codec.js';
import type { Checkpointer, CheckpointInput, ClaimGuard } from '../checkpointer.js';
import { AlreadyResumed, CheckpointError, ResumeRequired } from '../errors.js';
import { DEFAULT_LEASE_MS, holderOf, RunLease } from './lease.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';
import { noFaults, type FaultHook } from '../faults.js';
import type { Message, Model, ModelReply, ToolCall, ToolSpec } from '../models/model.js';
import type { UsageRecord } from '../../shared/usage.js';
import { currentRun, withRun, type RunContext, type ToolScope } from './context.js';
import { Resume } from './interrupt.js';
import { pauseNotOpen, type ResumeOptions } from './pause.js';
import { checkClaimDecisionId } from '../store/decisions.js';
import { toolSpec, type Tool } from './tool.js';

export interface AgentOptions {
  name: string;
  model: Model;
  tools?: Tool[];
  /** Required for a top-level agent; a worker used through `asTool` uses its supervisor's store. */
  checkpointer?: Checkpointer;
  system?: string;
  /** Node kind in agent paths: `agent` (default) or `supervisor`. */
  kind?: 'agent' | 'supervisor';
  /** Model calls allowed per run before it fails with MAX_TURNS. Default 32. */
  maxTurns?: number;
  /**
   * How long a run's lease lasts without renewal (ms; default 30 000). The
   * runner renews it with each write and every third of it meanwhile; a run
   * whose process died can be taken over once it expires.
   */
  leaseMs?: number;
  faults?: FaultHook;
}

export interface RunResult {
  status: 'completed' | 'paused' | 'failed';
  executionId: string;
  output?: string;
  pendingInterrupt?: PendingInterrupt;
  error?: { code: string; message: string };
}

/**
 * What `onEvent` sees while a run goes. `committed` says whether the event's
 * content is already in a row: a `text-delta` never is (the reply is written
 * with the step's next row), a `tool-result` is written with the next row the
 * run writes. A crash loses what was not committed; on resume the model call is
 * re-issued and a `step-start` with the same `checkpointId` (and
 * `reentered: true`) comes again: an app drops the text it showed for that
 * checkpoint and shows the new one.
 */
export type RunEvent =
  | { type: 'step-start'; committed: true; executionId: string; agentPath: string; turn: number; checkpointId: string; reentered: boolean }
  | { type: 'text-delta'; committed: false; executionId: string; agentPath: string; turn: number; delta: string }
  | { type: 'tool-call'; committed: true; executionId: string; agentPath: string; turn: number; call: ToolCall; checkpointId: string }
  | { type: 'tool-result'; committed: false; executionId: string; agentPath: string; turn: number; toolCallId: string; name: string; content: string }
  | { type: 'pause'; committed: true; executionId: string; pendingInterrupt: PendingInterrupt }
  | { type: 'end'; committed: true; executionId: string; result: RunResult };

export interface RunOptions {
  /**
   * Called synchronously with each event, in order. Its errors are caught and
   * dropped: a listener cannot change what the run writes. With a listener
   * the agent uses the model's `stream` method when it has one.
   */
  onEvent?: (event: RunEvent) => void;
}

interface RunState extends State {
  messages: Message[] & Json[];
  turn: number;
}

interface Level {
  executionId: string;
  store: Checkpointer;
  path: string;
  /** Rows of this level come after this seq (its parent's tool row), -1 at the top. */
  afterSeq: number;
  /**
   * The newest row of the execution this level knows of (null before a fresh
   * run's first row): each write names it, so a write into an execution
   * deleted or pruned meanwhile is refused (EXECUTION_GONE) instead of
   * starting it again at seq 0.
   */
  prevId: string | null;
  /** The runner's lease on the execution (shared by nested workers). */
  lease: RunLease;
  /** Usage of model calls not yet written: the next row written takes it (shared by nested workers). */
  usage: UsageRecord[];
  onEvent?: (event: RunEvent) => void;
}

/** Where a level's rows are: enough to read them, no lease needed. */
type Place = Omit<Level, 'lease' | 'prevId' | 'usage' | 'onEvent'>;

type Entry = { kind: 'model'; write: boolean } | { kind: 'tool'; index: number; row: Checkpoint | null; resumes: Json[]; single: boolean };

/** Propagates a recorded pause to the outermost runner. */
class PauseOutcome extends Error {
  constructor(readonly pending: PendingInterrupt) {
    super('paused');
  }
}

/**
 * Errors that mean the run's record could not be kept: a store failure under a
 * tool, a side effect whose result could not be recorded. They are thrown from
 * run/resume with no failed marker (the run stays resumable from its newest
 * row), and never shown to the model as a tool result it could answer by
 * calling the tool again.
 */
const ESCAPES: ReadonlySet<string> = new Set([ErrorCode.STORE_FAILED, ErrorCode.EFFECT_NOT_RECORDED, ErrorCode.EXECUTION_GONE, ErrorCode.LEASE_LOST, ErrorCode.RUN_CANCELLED]);
const escapes = (e: unknown) => ESCAPES.has((e as { code?: string })?.code ?? '');

/**
 * The store operations of the loop itself. A store refusing what it was given
 * (a WaymarkError: INVALID_ROW, CORRUPT_ROW…) is a run failure like any other;
 * the store failing (a driver or I/O error) is STORE_FAILED, which escapes.
 */
function kept<T>(op: Promise<T>): Promise<T> {
  return op.catch((e: unknown) => {
    if (e instanceof WaymarkError) throw e;
    throw new WaymarkError(ErrorCode.STORE_FAILED, `the store failed: ${(e as Error)?.message ?? e}`, { cause: e });
  });
}

const NOT_RUN = '[no result: the run was interrupted before this tool ran; it was not run on resume]';

function freeze<T>(m: T): T {
  return deepFreeze(m);
}

function emit(level: Level, event: RunEvent): void {
  if (!level.onEvent) return;
  try {
    level.onEvent(event);
  } catch {
    // a listener cannot change the run
  }
}

/** `extra` with the level's pending usage added (as `usage`), or `extra` as it is when none is pending. */
function withUsage(level: Level, extra: Record<string, Json> | null): Record<string, Json> | null {
  if (!level.usage.length) return extra;
  return { ...(extra ?? {}), usage: level.usage.map((u) => ({ ...u })) as unknown as Json };
}

export class Agent {
  readonly name: string;
  readonly kind: 'agent' | 'supervisor';
  private readonly model: Model;
  private readonly tools = new Map<string, Tool>();
  /** Worker agents by the tool name that delegates to them, and by agent name (paths use the latter). */
  private readonly workersByTool = new Map<string, Agent>();
  private readonly workers = new Map<string, Agent>();
  private readonly store?: Checkpointer;
  private readonly system?: string;
  private readonly maxTurns: number;
  readonly leaseMs: number;
  private readonly fault: FaultHook;
  /** Called before a local claim (overrides the store's guard installed by connectPlane). */
  claimGuard?: ClaimGuard;

  constructor(options: AgentOptions) {
    this.name = options.name;
    this.kind = options.kind ?? 'agent';
    this.model = options.model;
    this.store = options.checkpointer;
    this.system = options.system;
    this.maxTurns = options.maxTurns ?? 32;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 1) throw new WaymarkError(ErrorCode.INVALID_OPTIONS, `leaseMs must be a positive integer (got ${String(options.leaseMs)})`);
    this.fault = options.faults ?? noFaults;
    for (const t of options.tools ?? []) {
      if (this.tools.has(t.name)) throw new Error(`duplicate tool name '${t.name}'`);
      this.tools.set(t.name, t);
      const w = (t.delegate as Agent | undefined) ?? undefined;
      if (w) {
        this.workersByTool.set(t.name, w);
        this.workers.set(w.name, w);
      }
    }
  }

  private specs?: readonly ToolSpec[];
  /** What the model is told about the tools (built once). */
  private toolSpecs(): readonly ToolSpec[] {
    return (this.specs ??= Object.freeze([...this.tools.values()].map(toolSpec)));
  }

  /** This agent's path at the top of a run. */
  get path(): string {
    return `${this.kind}:${this.name}`;
  }

  /** Expose this agent as a tool a supervisor can delegate to; its rows nest under the supervisor's path. */
  asTool(options: { name?: string; description?: string } = {}): Tool {
    const name = options.name ?? this.name;
    return Object.freeze({
      name,
      description: options.description ?? `Delegate a task to the ${this.name} agent.`,
      parameters: z.object({ task: z.string() }),
      execute: () => {
        throw new Error('a delegating tool runs through its supervisor');
      },
      delegate: this,
    });
  }

  private requireStore(): Checkpointer {
    if (!this.store) throw new CheckpointError(`agent '${this.name}' has no checkpointer`);
    return this.store;
  }

  /** Start a run. The returned status is completed, paused (awaiting a Resume) or failed. */
  async run(input: string, options: { executionId?: string } & RunOptions = {}): Promise<RunResult> {
    const store = this.requireStore();
    await store.setup();
    const executionId = options.executionId ?? uuidv7();
    const exists = () =>
      new CheckpointError(`execution '${executionId}' already has rows; resume or fork it instead`, {
        code: ErrorCode.EXECUTION_EXISTS,
        details: { executionId },
      });
    if (await store.latest(executionId)) throw exists();
    const lease = await this.acquire(store, executionId);
    const level = await this.holding(lease, async () => {
      // another runner may have started and finished it between the read above and the lease
      if (await store.latest(executionId)) throw exists();
      return this.topLevel(executionId, store, null, lease, options.onEvent);
    });
    return this.outer(level, () => this.loop(level, this.initialState(input), { kind: 'model', write: true }));
  }

  private async acquire(store: Checkpointer, executionId: string): Promise<RunLease> {
    const lease = await kept(store.acquireLease(executionId, { holder: holderOf(store), ttlMs: this.leaseMs }));
    return new RunLease(store, lease);
  }

  /** Run the checks between taking a lease and the run's loop; a refusal gives the lease back. */
  private async holding<T>(lease: RunLease, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      await lease.stop();
      throw e;
    }
  }

  /**
   * Continue a run from its newest row. A paused run needs `resume`; the pause
   * is claimed atomically, so of many concurrent resumers exactly one runs.
   */
  async resume(executionId: string, resume?: Resume | { approved: boolean; metadata?: Record<string, Json> }, options: ResumeOptions = {}): Promise<RunResult> {
    const decisionId = checkClaimDecisionId(options.decisionId) ?? undefined;
    const store = this.requireStore();
    await store.setup();
    const latest = await store.latest(executionId);
    if (!latest) {
      const hint = store.planeGuard.current ? '; restoreFromPlane(store, id, …) brings a run this store has never seen' : '';
      throw new CheckpointError(`execution '${executionId}' has no rows in this store${hint}`, {
        code: ErrorCode.EXECUTION_NOT_FOUND,
        details: { executionId },
      });
    }
    if (latest.step === 'run_end' && latest.status === 'completed') {
      throw new AlreadyResumed(`execution '${executionId}' already finished (completed); there is nothing to resume`, {
        executionId,
      });
    }
    if (isCancelMarker(latest)) throw runCancelled(latest);
    const answer = resume === undefined ? undefined : (resume instanceof Resume ? resume : new Resume(resume)).toJSON();
    let newest = latest.id;
    let lease: RunLease;
    if (options.checkpointId !== undefined && options.checkpointId !== latest.id && (answer !== undefined || latest.status === 'interrupted'))
      throw pauseNotOpen(executionId, options.checkpointId, latest);
    if (latest.status === 'interrupted') {
      if (answer === undefined) throw new ResumeRequired(executionId, latest.interruptReason ?? 'paused');
      this.resolveTool(latest.agentPath);
      const paused = (await store.readState(latest)) as RunState;
      const prior = Array.isArray(paused.resumes) ? (paused.resumes as Json[]) : [];
      const guard = this.claimGuard ?? store.planeGuard.current?.claim;
      if (guard) await guard({ executionId, checkpointId: latest.id, ...(decisionId ? { decisionId } : {}) });
      // the claim names the pause read above: if another resumer answered it meanwhile, a later pause is not taken
      const claimed = await store.claimInterrupt(
        { executionId, checkpointId: latest.id },
        {
          // the claim winner takes the lease in the claim's transaction: a claimed resume is never left unowned
          lease: { holder: holderOf(store), ttlMs: this.leaseMs },
          decisionId,
          next: {
            executionId,
            prevId: latest.id,
            nodeId: latest.nodeId,
            turn: latest.turn,
            step: 'tool_call',
            status: 'completed',
            agentPath: latest.agentPath,
            parentId: latest.id,
            state: { ...paused, resumes: [...prior, answer] },
            nodeInput: latest.nodeInput,
          },
        },
      );
      if (!claimed) {
        // closed by a cancel rather than answered by another resumer
        const now = await store.latest(executionId);
        if (isCancelMarker(now)) throw runCancelled(now!);
        throw new AlreadyResumed(`execution '${executionId}': the pause at checkpoint ${latest.id} is no longer open: another resumer answered it`, { executionId, checkpointId: latest.id });
      }
      newest = claimed.checkpoint?.id ?? newest;
      lease = new RunLease(store, claimed.lease!);
    } else if (answer !== undefined) {
      throw new AlreadyResumed(`execution '${executionId}' has no pending interrupt to claim`, { executionId });
    } else {
      // connected to a plane: another machine's run is taken over there first (one winner, only once its lease ran out)
      await store.planeGuard.current?.takeover({ executionId, seq: latest.seq });
      // a live runner (or one dead less than a lease ago) refuses this with RunInProgress
      lease = await this.acquire(store, executionId);
    }
    const { level, own } = await this.holding(lease, async () => {
      if (answer === undefined) {
        // what the run became while the lease was held by another: finished, paused, or further along
        const now = await store.latest(executionId);
        if (now && now.step === 'run_end' && now.status === 'completed') {
          throw new AlreadyResumed(`execution '${executionId}' already finished (completed); there is nothing to resume`, { executionId });
        }
        if (isCancelMarker(now)) throw runCancelled(now!);
        if (now && now.status === 'interrupted') throw new ResumeRequired(executionId, now.interruptReason ?? 'paused');
        if (now) newest = now.id;
      }
      const level = this.topLevel(executionId, store, newest, lease, options.onEvent);
      const own = await this.latestOwn(level);
      if (!own) throw new CheckpointError(`execution '${executionId}' has no row of ${this.path} to resume from`);
      if (own.step === 'tool_call') this.resolveTool(own.agentPath);
      return { level, own };
    });
    return this.outer(level, () => this.reenter(level, own));
  }

  /**
   * Branch a run under a new execution id from one of its steps (default: the
   * newest step). The original's rows are untouched. A fork from the run-end
   * marker is refused: it is not a step. `input` adds a user message at a turn boundary;
   * `executionId` names the fork (default: a new UUIDv7).
   */
  async fork(executionId: string, options: { checkpointId?: string; input?: string; executionId?: string } & RunOptions = {}): Promise<RunResult> {
    const store = this.requireStore();
    await store.setup();
    const level: Place = { executionId, store, path: this.path, afterSeq: -1 };
    let src: Checkpoint | null;
    if (options.checkpointId) {
      src = await store.getById(options.checkpointId);
      if (!src || src.executionId !== executionId) {
        throw new CheckpointError(`checkpoint '${options.checkpointId}' is not a row of execution '${executionId}'`);
      }
      if (src.step === 'run_end') {
        throw new CheckpointError(`checkpoint '${src.id}' of execution '${executionId}' is the run-end marker, not a step; fork from a step`, { details: { checkpointId: src.id } });
      }
      if (!this.isOwn(level, src.agentPath)) {
        throw new CheckpointError(`checkpoint '${src.id}' belongs to ${src.agentPath}; fork from a row of ${this.path}`);
      }
    } else {
      src = await this.latestOwn(level);
      if (!src) throw new CheckpointError(`execution '${executionId}' has no step to fork from`);
    }
    const srcStep = src.step === 'fork_origin' ? ((src.nodeInput as { step: string }).step as Checkpoint['step']) : src.step;
    let state = (await store.readState(src)) as RunState;
    if (options.input !== undefined) {
      if (srcStep !== 'llm_call') throw new CheckpointError('fork input can only be added at a turn boundary (an llm_call row)');
      state = { ...state, messages: [...state.messages, freeze({ role: 'user' as const, content: options.input })] };
    }
    if (srcStep === 'hitl_pause') {
      const { resumes: _drop, ...rest } = state;
      state = { ...rest, resumes: Array.isArray(_drop) ? _drop : [] } as RunState;
    }
    const newId = options.executionId ?? uuidv7();
    const exists = () => new CheckpointError(`execution '${newId}' already has rows; choose another id for the fork`, { code: ErrorCode.EXECUTION_EXISTS });
    if (await store.latest(newId)) throw exists();
    const lease = await this.acquire(store, newId);
    const from = src;
    const origin = await this.holding(lease, async () => {
      if (await store.latest(newId)) throw exists();
      return store.put(
        {
          executionId: newId,
          prevId: null,
          nodeId: 'fork_origin',
          turn: from.turn,
          step: 'fork_origin',
          status: 'completed',
          agentPath: this.path,
          parentId: from.id,
          state,
          nodeInput: { executionId, checkpointId: from.id, nodeId: from.nodeId, step: srcStep },
        },
        { lease: lease.lease },
      );
    });
    const forked = this.topLevel(newId, store, origin.id, lease, options.onEvent);
    return this.outer(forked, () => this.reenter(forked, origin));
  }

  // ── the loop ──────────────────────────────────────────────────────────

  private topLevel(executionId: string, store: Checkpointer, prevId: string | null, lease: RunLease, onEvent?: (e: RunEvent) => void): Level {
    return { executionId, store, path: this.path, afterSeq: -1, prevId, lease, usage: [], onEvent };
  }

  private initialState(input: string): RunState {
    const messages: Message[] = [];
    if (this.system) messages.push(freeze({ role: 'system', content: this.system }));
    messages.push(freeze({ role: 'user', content: input }));
    return { messages: messages as RunState['messages'], turn: 0 };
  }

  /** The outermost runner: writes the run-end marker, never for a pause. */
  private async outer(level: Level, body: () => Promise<{ output: string; state: RunState }>): Promise<RunResult> {
    level.lease.start();
    let result: RunResult;
    try {
      result = await this.outerHeld(level, body);
    } finally {
      await level.lease.stop();
    }
    if (result.status === 'paused' && result.pendingInterrupt) {
      emit(level, { type: 'pause', committed: true, executionId: level.executionId, pendingInterrupt: result.pendingInterrupt });
    }
    emit(level, { type: 'end', committed: true, executionId: level.executionId, result });
    return result;
  }

  private async outerHeld(level: Level, body: () => Promise<{ output: string; state: RunState }>): Promise<RunResult> {
    const lease = level.lease;
    const ctx: RunContext = { executionId: level.executionId, store: level.store, agentPath: level.path, tool: null, lease };
    return withRun(ctx, async () => {
      let done: { output: string; state: RunState };
      try {
        done = await body();
      } catch (e) {
        if (e instanceof PauseOutcome) {
          lease.ended = true;
          return { status: 'paused', executionId: level.executionId, pendingInterrupt: e.pending };
        }
        if (escapes(e)) throw e;
        const error = { code: (e as { code?: string }).code ?? ErrorCode.RUN_FAILED, message: (e as Error).message ?? String(e) };
        const last = await level.store.latest(level.executionId).catch(() => null);
        const state = last ? await level.store.readState(last).catch(() => ({})) : {};
        try {
          await level.store.put(
            {
              executionId: level.executionId,
              prevId: level.prevId,
              nodeId: 'run_end',
              turn: last?.turn ?? 0,
              step: 'run_end',
              status: 'failed',
              agentPath: level.path,
              parentId: last?.id ?? null,
              state,
              nodeOutput: withUsage(level, { error }),
            },
            { lease: lease.lease },
          );
          level.usage.length = 0;
          lease.ended = true;
        } catch {
          // the store itself failed (or the execution is gone): no marker, the run stays resumable from its newest row
          throw e;
        }
        return { status: 'failed', executionId: level.executionId, error };
      }
      await level.store.put(
        {
          executionId: level.executionId,
          prevId: level.prevId,
          nodeId: 'run_end',
          turn: done.state.turn,
          step: 'run_end',
          status: 'completed',
          agentPath: level.path,
          state: done.state,
          // the output as it was, or with the usage of calls since the previous row: { output, usage }
          nodeOutput: level.usage.length ? withUsage(level, { output: done.output }) : done.output,
        },
        { lease: lease.lease },
      );
      level.usage.length = 0;
      lease.ended = true;
      this.fault('runtime.afterRunEnd');
      return { status: 'completed', executionId: level.executionId, output: done.output };
    });
  }

  private async checkpoint(level: Level, input: Omit<CheckpointInput, 'executionId' | 'status' | 'prevId'>): Promise<Checkpoint> {
    const nodeOutput = withUsage(level, null);
    const row = await kept(
      level.store.put({ ...input, executionId: level.executionId, prevId: level.prevId, status: 'completed', ...(nodeOutput ? { nodeOutput } : {}) }, { lease: level.lease.lease }),
    );
    level.usage.length = 0;
    level.prevId = row.id;
    return row;
  }

  /** One model call: streamed when someone listens and the model can stream. */
  private async callModel(level: Level, state: RunState): Promise<ModelReply> {
    // the tool definitions are built on first read: a model that never reads them (scripted) never pays for it
    const agent = this;
    // once built they are a plain value (a getter sends a model that copies the request down V8's slow path)
    const request = this.specs
      ? { messages: state.messages, tools: this.specs }
      : {
          messages: state.messages,
          get tools() {
            return agent.toolSpecs();
          },
        };
    if (!level.onEvent || !this.model.stream) return this.model.generate(request);
    let parts = 0;
    return this.model.stream(request, (part) => {
      if (part.type !== 'text-delta' || !part.delta) return;
      emit(level, { type: 'text-delta', committed: false, executionId: level.executionId, agentPath: level.path, turn: state.turn, delta: part.delta });
      if (++parts === 1) this.fault('runtime.midStream');
    });
  }

  private async loop(level: Level, start: RunState, first: Entry): Promise<{ output: string; state: RunState }> {
    let state = start;
    let entry = first;
    for (;;) {
      if (entry.kind === 'model') {
        if (state.turn >= this.maxTurns) {
          throw new WaymarkError(ErrorCode.MAX_TURNS, `agent '${this.name}' reached ${this.maxTurns} turns`);
        }
        if (entry.write) {
          await this.checkpoint(level, { nodeId: `turn:${state.turn}`, turn: state.turn, step: 'llm_call', agentPath: level.path, state });
        }
        emit(level, {
          type: 'step-start',
          committed: true,
          executionId: level.executionId,
          agentPath: level.path,
          turn: state.turn,
          checkpointId: level.prevId ?? '',
          reentered: !entry.write,
        });
        this.fault('runtime.beforeModel');
        level.lease.check();
        const reply = await this.callModel(level, state);
        if (reply.usage) {
          level.usage.push({
            model: reply.usage.model || this.model.name,
            agentPath: level.path,
            turn: state.turn,
            inputTokens: reply.usage.inputTokens,
            outputTokens: reply.usage.outputTokens,
            cachedInputTokens: reply.usage.cachedInputTokens,
            finishReason: reply.finishReason ?? null,
          });
        }
        const assistant = freeze({
          role: 'assistant' as const,
          content: reply.content === null ? null : storableText(reply.content),
          ...(reply.toolCalls.length ? { toolCalls: reply.toolCalls } : {}),
        });
        state = { messages: [...state.messages, assistant] as RunState['messages'], turn: state.turn };
        if (!reply.toolCalls.length) return { output: reply.content ?? '', state };
        entry = { kind: 'tool', index: 0, row: null, resumes: [], single: false };
        continue;
      }
      const calls = lastToolCalls(state.messages);
      for (let i = entry.index; i < calls.length; i++) {
        const call = calls[i];
        const isEntry = i === entry.index;
        const resumes = isEntry ? entry.resumes : [];
        const toolState: RunState = {
          messages: state.messages,
          turn: state.turn,
          toolName: call.name,
          toolCallId: call.id,
          ...(resumes.length ? { resumes } : {}),
        };
        const agentPath = `${level.path}/tool:${call.name}`;
        const row =
          isEntry && entry.row
            ? entry.row
            : await this.checkpoint(level, {
                nodeId: `turn:${state.turn}/tool:${call.name}`,
                turn: state.turn,
                step: 'tool_call',
                agentPath,
                state: toolState,
                nodeInput: call.arguments,
              });
        emit(level, { type: 'tool-call', committed: true, executionId: level.executionId, agentPath, turn: state.turn, call, checkpointId: row.id });
        this.fault('runtime.beforeTool');
        level.lease.check();
        const content = await this.invoke(level, call, toolState, row, resumes);
        this.fault('runtime.afterTool');
        const result = freeze({ role: 'tool' as const, toolCallId: call.id, name: call.name, content: storableText(content) });
        emit(level, {
          type: 'tool-result',
          committed: false,
          executionId: level.executionId,
          agentPath,
          turn: state.turn,
          toolCallId: call.id,
          name: call.name,
          content: result.content,
        });
        state = { messages: [...state.messages, result] as RunState['messages'], turn: state.turn };
        if (isEntry && entry.single) {
          const rest = calls.slice(i + 1).map((c) => freeze({ role: 'tool' as const, toolCallId: c.id, name: c.name, content: NOT_RUN }));
          state = { messages: [...state.messages, ...rest] as RunState['messages'], turn: state.turn };
          break;
        }
      }
      state = { messages: state.messages, turn: state.turn + 1 };
      entry = { kind: 'model', write: true };
    }
  }

  /** Run one tool call; a thrown error is a tool result, a pause is recorded and propagated. */
  private async invoke(level: Level, call: ToolCall, toolState: RunState, row: Checkpoint, resumes: Json[]): Promise<string> {
    const t = this.tools.get(call.name);
    if (!t) return `Tool '${call.name}' does not exist. Available: ${[...this.tools.keys()].join(', ') || 'none'}.`;
    const parsed = t.parameters.safeParse(call.arguments);
    if (!parsed.success) {
      return `Tool '${call.name}' got invalid arguments: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`;
    }
    const scope: ToolScope = { toolName: call.name, resumes, interrupts: 0, pause: null, escaped: null };
    const parent = currentRun();
    const ctx: RunContext = {
      executionId: level.executionId,
      store: level.store,
      agentPath: `${level.path}/tool:${call.name}`,
      tool: scope,
      lease: level.lease,
    };
    let result: unknown;
    try {
      const worker = this.workersByTool.get(call.name);
      if (worker) {
        result = await withRun({ ...(parent ?? ctx), tool: null }, () => worker.runNested(level, row, (parsed.data as { task: string }).task));
      } else {
        result = await withRun(ctx, async () => t.execute(parsed.data));
      }
    } catch (e) {
      if (e instanceof PauseOutcome) throw e;
      if (escapes(e)) throw e;
      if (scope.escaped) throw scope.escaped;
      if (!scope.pause) return `Tool '${call.name}' failed: ${(e as Error)?.message ?? String(e)}`;
    }
    // a tool that caught the escape cannot turn it into a result the model might retry
    if (scope.escaped) throw scope.escaped;
    if (scope.pause) {
      const { checkpoint: _c, pending } = await kept(
        level.store.recordInterrupt(
          {
            executionId: level.executionId,
            prevId: level.prevId,
            nodeId: `turn:${toolState.turn}/tool:${call.name}`,
            turn: toolState.turn,
            step: 'hitl_pause',
            status: 'interrupted',
            agentPath: `${level.path}/tool:${call.name}`,
            parentId: row.id,
            state: scope.pause.index > 0 ? { ...toolState, resumes: resumes.slice(0, scope.pause.index) } : stripResumes(toolState),
            nodeInput: call.arguments,
            interruptReason: scope.pause.reason,
            interruptContext: scope.pause.context,
            ...(level.usage.length ? { nodeOutput: withUsage(level, null) } : {}),
          },
          { reason: scope.pause.reason, context: scope.pause.context },
          { lease: level.lease.lease },
        ),
      );
      level.usage.length = 0;
      throw new PauseOutcome(pending);
    }
    if (typeof result === 'string') return result;
    return JSON.stringify(result === undefined ? null : result);
  }

  /** Run this agent as a worker under `parent`'s tool row; picks up its own rows if it ran before. */
  private async runNested(parent: Level, parentRow: Checkpoint, task: string): Promise<string> {
    const level: Level = {
      executionId: parent.executionId,
      store: parent.store,
      path: `${parent.path}/agent:${this.name}`,
      afterSeq: parentRow.seq,
      prevId: parentRow.id,
      lease: parent.lease,
      usage: parent.usage,
      onEvent: parent.onEvent,
    };
    const own = await this.latestOwn(level);
    if (own) level.prevId = own.id;
    const done = own ? await this.reenter(level, own) : await this.loop(level, this.initialState(task), { kind: 'model', write: true });
    return done.output;
  }

  private async reenter(level: Level, row: Checkpoint): Promise<{ output: string; state: RunState }> {
    const state = (await kept(level.store.readState(row))) as RunState;
    const step = row.step === 'fork_origin' ? (row.nodeInput as { step: Checkpoint['step'] }).step : row.step;
    if (step === 'llm_call') return this.loop(level, stripTool(state), { kind: 'model', write: false });
    if (step === 'tool_call' || (step === 'hitl_pause' && row.step === 'fork_origin')) {
      const calls = lastToolCalls(state.messages);
      const index = calls.findIndex((c) => c.id === state.toolCallId);
      if (index < 0) throw new CheckpointError(`row ${row.id} names tool call '${String(state.toolCallId)}' that its history does not hold`);
      const resumes = Array.isArray(state.resumes) ? (state.resumes as Json[]) : [];
      return this.loop(level, stripTool(state), {
        kind: 'tool',
        index,
        row,
        resumes,
        single: true,
      });
    }
    if (step === 'hitl_pause') {
      throw new ResumeRequired(level.executionId, row.interruptReason ?? 'paused');
    }
    throw new CheckpointError(`cannot re-enter at row ${row.id} (${row.step})`);
  }

  private isOwn(level: Place, agentPath: string): boolean {
    if (agentPath === level.path) return true;
    const prefix = `${level.path}/tool:`;
    return agentPath.startsWith(prefix) && !agentPath.slice(prefix.length).includes('/');
  }

  /** Newest row of this level's own path (markers skipped), walking back page by page. */
  private async latestOwn(level: Place): Promise<Checkpoint | null> {
    let before: number | undefined;
    // the newest row is nearly always the agent's own: read one row first, then pages growing 4× (to 256)
    for (let limit = 1; ; limit = Math.min(256, limit * 4)) {
      const page = await kept(level.store.list(level.executionId, { order: 'desc', beforeSeq: before, limit }));
      if (!page.length) return null;
      for (const r of page) {
        if (r.seq <= level.afterSeq) return null;
        if (r.step !== 'run_end' && this.isOwn(level, r.agentPath)) return r;
      }
      before = page[page.length - 1].seq;
    }
  }

  /** Walk an agent path (`agent:A/agent:W/tool:T`) through this agent's workers; throws TOOL_NOT_FOUND naming a missing tool. */
  private resolveTool(agentPath: string): void {
    const parts = agentPath.split('/');
    if (parts[0] !== this.path) {
      throw new CheckpointError(`row belongs to '${parts[0]}', not to ${this.path}`);
    }
    let agent: Agent = this;
    for (const part of parts.slice(1)) {
      const [kind, name] = [part.slice(0, part.indexOf(':')), part.slice(part.indexOf(':') + 1)];
      if (kind === 'agent') {
        const w = agent.workers.get(name);
        if (!w) throw new CheckpointError(`the paused run needs worker agent '${name}', which agent '${agent.name}' does not have`, { details: { tool: name } });
        agent = w;
      } else if (kind === 'tool') {
        if (!agent.tools.has(name)) {
          throw new CheckpointError(`the run needs tool '${name}', which agent '${agent.name}' does not have`, { details: { tool: name }, code: ErrorCode.TOOL_NOT_FOUND });
        }
      }
    }
  }
}

function lastToolCalls(messages: readonly Message[]): ToolCall[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant') return m.toolCalls ?? [];
  }
  return [];
}

function stripResumes(state: RunState): RunState {
  const { resumes: _r, ...rest } = state;
  return rest as RunState;
}

function stripTool(state: RunState): RunState {
  return { messages: state.messages, turn: state.turn };
}
