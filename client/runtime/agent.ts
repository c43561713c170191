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
 *                 the model is not called; siblings after it are answered "not run";
 *                 a row marked as written for a tool the agent did not have (TOOL_MISSING)
 *                 is answered "does not exist" again; an unmarked one whose tool is gone
 *                 is refused (TOOL_NOT_FOUND)
 *   hitl_pause  → claim the pause (writing a tool_call row with the answer, atomically), then as tool_call
 *   run_end     → completed: AlreadyFinished; cancelled: RunCancelled; failed: stepped over
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
import type { Json } from '../../shared/json.js';
import { ErrorCode, issueProblems } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import {
  durationProblem,
  functionProblem,
  integerProblem,
  oneOfProblem,
  optionNames,
  optionsProblems,
  readableNameProblem,
  refuse,
  stringProblem,
  unknownOptions,
  booleanProblem,
} from '../../support/validate.js';
import { ExecutionId, type Checkpoint } from '../../shared/rows.js';
import type { Checkpointer, ClaimGuard } from '../checkpointer.js';
import { CheckpointError } from '../errors.js';
import { DEFAULT_LEASE_MS } from './lease.js';
import { noFaults, type FaultHook } from '../faults.js';
import type { Model } from '../models/model.js';
import type { Resume } from './interrupt.js';
import { claimOrTake } from './resume.js';
import { checkClaimDecisionId } from '../store/decisions.js';
import { segmentProblems, type Tool } from './tool.js';
import { AgentLoop } from './loop.js';
import { acquireRun, freeze, holding } from './run-state.js';
import type { AsToolOptions, ForkOptions, Place, ResumeOptions, RunResult, RunState, StartOptions } from './types.js';

/** Options of `new Agent(...)`: its name, model, tools, store and limits. */
export interface AgentOptions {
  /**
   * A segment of the path the agent's rows are filed under (`agent:NAME`,
   * `supervisor:NAME`), which is split on '/': not empty or blank, at most 256
   * characters (code points), no '/', nothing a terminal acts on (control characters,
   * bidi marks). Another name is refused when the agent is made
   * (INVALID_OPTIONS, each problem named).
   */
  name: string;
  /** The model that answers each turn (`OpenAIChatModel`, `fromAISDK(...)`, `ScriptedModel`, or any `Model`). */
  model: Model;
  /** The tools the model may call, by their names (worker agents join as `agent.asTool()`). Default none. */
  tools?: Tool[];
  /** Required for a top-level agent; a worker used through `asTool` uses its supervisor's store. */
  checkpointer?: Checkpointer;
  /** The system prompt, the first message of every model request. Default none. */
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
  /** Named fault points for crash tests. Default none. */
  faults?: FaultHook;
}

const AGENT_OPTIONS = optionNames<AgentOptions>({
  name: true,
  model: true,
  tools: true,
  checkpointer: true,
  system: true,
  kind: true,
  maxTurns: true,
  leaseMs: true,
  faults: true,
});

// a misspelled executionId gave a run a fresh id: a retry of the call was not refused as EXECUTION_EXISTS, it ran again
// executionId and decisionId are checked by the call itself (checkExecutionId, checkClaimDecisionId)
const RUN_OPTIONS = optionNames<StartOptions>({ executionId: true, onEvent: functionProblem });
const RESUME_OPTIONS = optionNames<ResumeOptions>({
  onEvent: functionProblem,
  checkpointId: stringProblem,
  decisionId: true,
  withoutPlane: booleanProblem,
  expectNewestId: stringProblem,
});
const FORK_OPTIONS = optionNames<ForkOptions>({
  checkpointId: stringProblem,
  input: stringProblem,
  executionId: true,
  onEvent: functionProblem,
});

/**
 * An agent: a model with tools, whose runs are durable. Each step is a checkpoint in the store; a run that paused
 * or crashed goes on with `resume`, and a tool's side effect inside `idempotent` is not done twice.
 */
export class Agent {
  readonly name: string;
  readonly kind: 'agent' | 'supervisor';
  private readonly store?: Checkpointer;
  readonly leaseMs: number;
  /** The loop that runs this agent's steps (loop.ts). */
  private readonly runner: AgentLoop;
  /** Called before a local claim (overrides the store's guard installed by connectPlane). */
  claimGuard?: ClaimGuard;

  constructor(options: AgentOptions) {
    this.name = options.name;
    this.kind = options.kind ?? 'agent';
    this.store = options.checkpointer;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    checkAgentOptions(options);
    // worker agents' loops by the tool name that delegates to them (the loop invokes them)
    const tools = new Map<string, Tool>();
    const workersByTool = new Map<string, AgentLoop>();
    for (const t of options.tools ?? []) {
      tools.set(t.name, t);
      const w = (t.delegate as Agent | undefined) ?? undefined;
      if (w) workersByTool.set(t.name, w.runner);
    }
    this.runner = new AgentLoop({
      name: this.name,
      kind: this.kind,
      model: options.model,
      tools,
      workersByTool,
      system: options.system,
      maxTurns: options.maxTurns ?? 32,
      fault: options.faults ?? noFaults,
    });
  }

  /** This agent's path at the top of a run. */
  get path(): string {
    return `${this.kind}:${this.name}`;
  }

  /** Expose this agent as a tool a supervisor can delegate to; its rows nest under the supervisor's path. */
  asTool(options: AsToolOptions = {}): Tool {
    const name = options.name ?? this.name;
    refuse('asTool', segmentProblems('options.name', name));
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
  async run(input: string, options: StartOptions = {}): Promise<RunResult> {
    refuseCallOptions('run', options, RUN_OPTIONS, 'nothing was written');
    const executionId = options.executionId ?? uuidv7();
    checkExecutionId('run', 'options.executionId', executionId, true);
    const store = this.requireStore();
    await store.setup();
    const exists = () =>
      new CheckpointError(`execution '${executionId}' already has rows; resume or fork it instead`, {
        code: ErrorCode.EXECUTION_EXISTS,
        details: { executionId },
      });
    if (await store.latest(executionId)) throw exists();
    const lease = await acquireRun(store, executionId, this.leaseMs);
    const level = await holding(lease, async () => {
      // another runner may have started and finished it between the read above and the lease
      if (await store.latest(executionId)) throw exists();
      return this.runner.topLevel(executionId, store, null, lease, options.onEvent);
    });
    return this.runner.outer(level, () =>
      this.runner.loop(level, this.runner.initialState(input), { kind: 'model', write: true }),
    );
  }

  /**
   * Continue a run from its newest row. A paused run needs `resume`; the pause
   * is claimed atomically, so of many concurrent resumers exactly one runs.
   * A run a plane holds (`heldByPlane`) is resumed only through the plane's
   * claim: from a store with no plane connected it is refused with
   * NotConnected (PLANE_NOT_CONNECTED), unless `options.withoutPlane`.
   */
  async resume(
    executionId: string,
    resume?: Resume | { approved: boolean; metadata?: Record<string, Json> },
    options: ResumeOptions = {},
  ): Promise<RunResult> {
    // a misspelled checkpointId would answer whichever pause is open
    refuseCallOptions('resume', options, RESUME_OPTIONS, 'nothing was claimed');
    checkExecutionId('resume', 'executionId', executionId);
    const decisionId = checkClaimDecisionId(options.decisionId) ?? undefined;
    // a decision answers one pause: applied without naming it, it would answer whatever pause is open
    if (decisionId && options.checkpointId === undefined)
      refuse(
        'resume',
        ['checkpointId: required with decisionId (the pause the decision answers)'],
        'nothing was claimed',
      );
    const store = this.requireStore();
    await store.setup();
    const { level, own } = await claimOrTake(
      {
        executionId,
        store,
        runner: this.runner,
        leaseMs: this.leaseMs,
        claimGuard: this.claimGuard,
        options,
        decisionId,
      },
      resume,
    );
    return this.runner.outer(level, () => this.runner.reenter(level, own));
  }

  /**
   * Branch a run under a new execution id from one of its steps (default: the
   * newest step). The original's rows are untouched. A fork from the run-end
   * marker is refused: it is not a step. `input` adds a user message at a turn boundary;
   * `executionId` names the fork (default: a new UUIDv7).
   */
  async fork(executionId: string, options: ForkOptions = {}): Promise<RunResult> {
    refuseCallOptions('fork', options, FORK_OPTIONS, 'nothing was written');
    checkExecutionId('fork', 'executionId', executionId);
    if (options.executionId !== undefined) checkExecutionId('fork', 'options.executionId', options.executionId, true);
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
        throw new CheckpointError(
          `checkpoint '${src.id}' of execution '${executionId}' is the run-end marker, not a step; fork from a step`,
          { details: { checkpointId: src.id } },
        );
      }
      if (!this.runner.isOwn(level, src.agentPath)) {
        throw new CheckpointError(
          `checkpoint '${src.id}' belongs to ${src.agentPath}; fork from a row of ${this.path}`,
        );
      }
    } else {
      src = await this.runner.latestOwn(level);
      if (!src) throw new CheckpointError(`execution '${executionId}' has no step to fork from`);
    }
    const srcStep =
      src.step === 'fork_origin' ? ((src.nodeInput as { step: string }).step as Checkpoint['step']) : src.step;
    let state = (await store.readState(src)) as RunState;
    if (options.input !== undefined) {
      if (srcStep !== 'llm_call')
        throw new CheckpointError('fork input can only be added at a turn boundary (an llm_call row)');
      state = { ...state, messages: [...state.messages, freeze({ role: 'user' as const, content: options.input })] };
    }
    if (srcStep === 'hitl_pause') {
      const { resumes: _drop, ...rest } = state;
      state = { ...rest, resumes: Array.isArray(_drop) ? _drop : [] } as RunState;
    }
    const newId = options.executionId ?? uuidv7();
    const exists = () =>
      new CheckpointError(`execution '${newId}' already has rows; choose another id for the fork`, {
        code: ErrorCode.EXECUTION_EXISTS,
      });
    if (await store.latest(newId)) throw exists();
    const lease = await acquireRun(store, newId, this.leaseMs);
    const from = src;
    const origin = await holding(lease, async () => {
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
    const forked = this.runner.topLevel(newId, store, origin.id, lease, options.onEvent);
    return this.runner.outer(forked, () => this.runner.reenter(forked, origin));
  }
}

/**
 * An agent's definition, checked before anything uses it; every problem is
 * named (INVALID_OPTIONS, `details.problems`). Its name and its tools' names
 * are path segments (`agent:NAME/tool:NAME`, split on '/'), held to
 * segmentProblems (what a path cannot hold, and what a terminal acts on).
 * `maxTurns` bounds every run: a NaN or 0 one never stops or never starts.
 */
function checkAgentOptions(options: AgentOptions): void {
  const problems = [...unknownOptions(options, AGENT_OPTIONS), ...segmentProblems('name', options.name)];
  for (const p of [
    oneOfProblem('kind', options.kind, ['agent', 'supervisor']),
    durationProblem('leaseMs', options.leaseMs, 1),
    integerProblem('maxTurns', options.maxTurns, 1),
  ])
    if (p) problems.push(p);
  const seen = new Set<string>();
  // a worker's rows are filed under `agent:NAME`: two workers of one name would share them
  const workers = new Map<string, { agent: unknown; at: number }>();
  for (const [i, t] of (options.tools ?? []).entries()) {
    problems.push(...segmentProblems(`tools[${i}].name`, t?.name));
    if (seen.has(t?.name)) problems.push(`tools[${i}]: duplicate tool name '${String(t?.name)}'`);
    seen.add(t?.name);
    const w = t?.delegate as Agent | undefined;
    if (!w) continue;
    const other = workers.get(w.name);
    if (other && other.agent !== w)
      problems.push(
        `tools[${i}] delegates to another worker agent named '${w.name}' than tools[${other.at}] (a worker's rows are filed under agent:${w.name})`,
      );
    else if (!other) workers.set(w.name, { agent: w, at: i });
  }
  refuse('Agent', problems);
}

/** A call's options, checked before anything is read: not an object, a name the call does not know, or a value of the wrong type is INVALID_OPTIONS. */
function refuseCallOptions(call: string, options: unknown, known: readonly string[], outcome: string): void {
  refuse(call, optionsProblems(options, known), outcome);
}

/**
 * An execution id the stores take, checked before anything is read or written
 * (not left to the lease's own check to name). A `fresh` id (a new run's, a
 * fork's) must also be one a person can read and type back: not blank, nothing
 * a terminal acts on. An existing run is found by whatever id it was stored under.
 */
function checkExecutionId(call: string, path: string, executionId: unknown, fresh = false): void {
  const r = ExecutionId.safeParse(executionId);
  const problems = r.success ? [] : issueProblems(r.error, path);
  if (fresh && r.success) {
    const p = readableNameProblem(path, executionId, LIMITS.executionIdLength);
    if (p) problems.push(p);
  }
  refuse(call, problems, 'nothing was written');
}
