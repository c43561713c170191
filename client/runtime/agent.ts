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
import { ExecutionId, type Checkpoint, type PendingInterrupt } from '../../shared/rows.js';
import type { Checkpointer, ClaimGuard } from '../checkpointer.js';
import { AlreadyResumed, CheckpointError, NotConnected, ResumeRequired } from '../errors.js';
import { DEFAULT_LEASE_MS, holderOf, RunLease } from './lease.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';
import { noFaults, type FaultHook } from '../faults.js';
import type { Model, ToolCall } from '../models/model.js';
import { Resume } from './interrupt.js';
import { pauseNotOpen, type ResumeOptions } from './pause.js';
import { checkClaimDecisionId } from '../store/decisions.js';
import { segmentProblems, toolSegment, type Tool } from './tool.js';
import { AgentLoop } from './loop.js';
import { freeze, kept, TOOL_MISSING, type Place, type RunState } from './run-state.js';

export interface AgentOptions {
  /**
   * A segment of the path the agent's rows are filed under (`agent:NAME`,
   * `supervisor:NAME`), which is split on '/': not empty or blank, at most 256
   * characters (code points), no '/', nothing a terminal acts on (control characters,
   * bidi marks). Another name is refused when the agent is made
   * (INVALID_OPTIONS, each problem named).
   */
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
  | {
      type: 'step-start';
      committed: true;
      executionId: string;
      agentPath: string;
      turn: number;
      checkpointId: string;
      reentered: boolean;
    }
  | { type: 'text-delta'; committed: false; executionId: string; agentPath: string; turn: number; delta: string }
  | {
      type: 'tool-call';
      committed: true;
      executionId: string;
      agentPath: string;
      turn: number;
      call: ToolCall;
      checkpointId: string;
    }
  | {
      type: 'tool-result';
      committed: false;
      executionId: string;
      agentPath: string;
      turn: number;
      toolCallId: string;
      name: string;
      content: string;
    }
  | { type: 'pause'; committed: true; executionId: string; pendingInterrupt: PendingInterrupt }
  | { type: 'end'; committed: true; executionId: string; result: RunResult };

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
const RUN_OPTIONS = optionNames<{ executionId?: string } & RunOptions>({ executionId: true, onEvent: functionProblem });
const RESUME_OPTIONS = optionNames<ResumeOptions>({
  onEvent: functionProblem,
  checkpointId: stringProblem,
  decisionId: true,
  withoutPlane: booleanProblem,
});
const FORK_OPTIONS = optionNames<{ checkpointId?: string; input?: string; executionId?: string } & RunOptions>({
  checkpointId: stringProblem,
  input: stringProblem,
  executionId: true,
  onEvent: functionProblem,
});

export interface RunOptions {
  /**
   * Called synchronously with each event, in order. Its errors are caught and
   * dropped: a listener cannot change what the run writes. With a listener
   * the agent uses the model's `stream` method when it has one.
   */
  onEvent?: (event: RunEvent) => void;
}

export class Agent {
  readonly name: string;
  readonly kind: 'agent' | 'supervisor';
  private readonly tools = new Map<string, Tool>();
  /** Worker agents by agent name (paths use it). */
  private readonly workers = new Map<string, Agent>();
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
    const workersByTool = new Map<string, AgentLoop>();
    for (const t of options.tools ?? []) {
      this.tools.set(t.name, t);
      const w = (t.delegate as Agent | undefined) ?? undefined;
      if (w) {
        workersByTool.set(t.name, w.runner);
        this.workers.set(w.name, w);
      }
    }
    this.runner = new AgentLoop({
      name: this.name,
      kind: this.kind,
      model: options.model,
      tools: this.tools,
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
  asTool(options: { name?: string; description?: string } = {}): Tool {
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
  async run(input: string, options: { executionId?: string } & RunOptions = {}): Promise<RunResult> {
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
    const lease = await this.acquire(store, executionId);
    const level = await this.holding(lease, async () => {
      // another runner may have started and finished it between the read above and the lease
      if (await store.latest(executionId)) throw exists();
      return this.runner.topLevel(executionId, store, null, lease, options.onEvent);
    });
    return this.runner.outer(level, () =>
      this.runner.loop(level, this.runner.initialState(input), { kind: 'model', write: true }),
    );
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
        [`checkpointId: required with decisionId (the pause decision ${decisionId} answers)`],
        'nothing was claimed',
      );
    const store = this.requireStore();
    await store.setup();
    const latest = await store.latest(executionId);
    if (!latest) {
      const hint = store.planeGuard.current
        ? '; restoreFromPlane(store, id, …) brings a run this store has never seen'
        : '';
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
    if (
      options.checkpointId !== undefined &&
      options.checkpointId !== latest.id &&
      (answer !== undefined || latest.status === 'interrupted')
    )
      throw pauseNotOpen(executionId, options.checkpointId, latest);
    if (latest.status === 'interrupted') {
      if (answer === undefined) throw new ResumeRequired(executionId, latest.interruptReason ?? 'paused');
      // before the claim: a pause this agent cannot carry on (a tool or a delegation gone) is left open
      await this.resolvePath(store, executionId, latest);
      // read once: a replica stopped meanwhile must not leave a claim that was checked by nothing
      const plane = store.planeGuard.current;
      const guard = this.claimGuard ?? (plane ? (c: Parameters<ClaimGuard>[0]) => plane.claim(c) : undefined);
      if (!guard) await refuseOffPlane(store, executionId, options);
      const paused = (await store.readState(latest)) as RunState;
      const prior = Array.isArray(paused.resumes) ? (paused.resumes as Json[]) : [];
      // one holder for both claims: the plane's owner record names the acquisition the store's lease is
      const holder = holderOf(store);
      if (guard)
        await guard({
          executionId,
          checkpointId: latest.id,
          ...(decisionId ? { decisionId } : {}),
          holder,
          ttlMs: this.leaseMs,
        });
      // the claim names the pause read above: if another resumer answered it meanwhile, a later pause is not taken
      const claimed = await store.claimInterrupt(
        { executionId, checkpointId: latest.id },
        {
          // the claim winner takes the lease in the claim's transaction: a claimed resume is never left unowned
          lease: { holder, ttlMs: this.leaseMs },
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
        throw new AlreadyResumed(
          `execution '${executionId}': the pause at checkpoint ${latest.id} is no longer open: another resumer answered it`,
          { executionId, checkpointId: latest.id },
        );
      }
      newest = claimed.checkpoint?.id ?? newest;
      lease = new RunLease(store, claimed.lease!);
    } else if (answer !== undefined) {
      throw new AlreadyResumed(`execution '${executionId}' has no pending interrupt to claim`, { executionId });
    } else {
      if (!store.planeGuard.current) await refuseOffPlane(store, executionId, options);
      // a live runner of this store (or one dead less than a lease ago) refuses this with RunInProgress; the plane is
      // asked only after this and the local checks, so a resume that cannot run here never takes the run from the fleet
      lease = await this.acquire(store, executionId);
    }
    const { level, own } = await this.holding(lease, async () => {
      if (answer === undefined) {
        // what the run became while the lease was held by another: finished, paused, or further along
        const now = await store.latest(executionId);
        if (now && now.step === 'run_end' && now.status === 'completed') {
          throw new AlreadyResumed(
            `execution '${executionId}' already finished (completed); there is nothing to resume`,
            { executionId },
          );
        }
        if (isCancelMarker(now)) throw runCancelled(now!);
        if (now && now.status === 'interrupted') throw new ResumeRequired(executionId, now.interruptReason ?? 'paused');
        if (now) newest = now.id;
        // re-entry inside a nested worker: its tool and every delegation to it must still be there
        if (now && now.step !== 'run_end') await this.resolvePath(store, executionId, now);
        // connected to a plane: another machine's run is taken over there (one owner, once its hold expired); the
        // guard may first bring what the plane holds and this copy lacks, so the newest row is read again after it
        const plane = store.planeGuard.current;
        if (plane && now) {
          await plane.takeover({ executionId, seq: now.seq, holder: lease.lease.holder, ttlMs: this.leaseMs });
          const after = await store.latest(executionId);
          if (after && after.id !== now.id) {
            if (isCancelMarker(after)) throw runCancelled(after);
            if (after.step === 'run_end' && after.status === 'completed')
              throw new AlreadyResumed(
                `execution '${executionId}' already finished (completed); there is nothing to resume`,
                { executionId },
              );
            if (after.status === 'interrupted')
              throw new ResumeRequired(executionId, after.interruptReason ?? 'paused');
            if (after.step !== 'run_end') await this.resolvePath(store, executionId, after);
            newest = after.id;
          }
        }
      }
      const level = this.runner.topLevel(executionId, store, newest, lease, options.onEvent);
      const own = await this.runner.latestOwn(level);
      if (!own) throw new CheckpointError(`execution '${executionId}' has no row of ${this.path} to resume from`);
      if (own.step === 'tool_call') await this.resolveTool(store, own);
      return { level, own };
    });
    return this.runner.outer(level, () => this.runner.reenter(level, own));
  }

  /**
   * Branch a run under a new execution id from one of its steps (default: the
   * newest step). The original's rows are untouched. A fork from the run-end
   * marker is refused: it is not a step. `input` adds a user message at a turn boundary;
   * `executionId` names the fork (default: a new UUIDv7).
   */
  async fork(
    executionId: string,
    options: { checkpointId?: string; input?: string; executionId?: string } & RunOptions = {},
  ): Promise<RunResult> {
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
    const forked = this.runner.topLevel(newId, store, origin.id, lease, options.onEvent);
    return this.runner.outer(forked, () => this.runner.reenter(forked, origin));
  }

  /**
   * What re-entering at `row` needs, checked before anything is claimed or
   * written: its path's workers and tool (resolveTool), and for a row inside
   * a nested worker, each level's delegation (that level's newest own row, a
   * tool row) still a tool delegating to that worker. A supervisor redeployed
   * with the delegation renamed or dropped would otherwise claim the pause
   * and then fail, or tell its model the tool does not exist.
   */
  private async resolvePath(store: Checkpointer, executionId: string, row: Checkpoint): Promise<void> {
    await this.resolveTool(store, row);
    let agent: Agent = this;
    let place: Place = { executionId, store, path: this.path, afterSeq: -1 };
    for (const part of row.agentPath.split('/').slice(1)) {
      if (!part.startsWith('agent:')) break;
      const name = part.slice('agent:'.length);
      const delegation = await kept(this.runner.latestOwn(place));
      // a tool row's node id names its tool (`turn:N/tool:NAME`); a fork's origin carries its source's
      const nodeId =
        delegation?.step === 'fork_origin'
          ? (delegation.nodeInput as { nodeId?: unknown } | null)?.nodeId
          : delegation?.nodeId;
      const at = typeof nodeId === 'string' ? nodeId.lastIndexOf('/tool:') : -1;
      const toolName = at >= 0 ? (nodeId as string).slice(at + '/tool:'.length) : null;
      const worker = agent.workers.get(name);
      if (!delegation || toolName === null || !worker || agent.tools.get(toolName)?.delegate !== worker) {
        throw new CheckpointError(
          `the run needs tool '${toolName ?? '?'}' of agent '${agent.name}' delegating to worker agent '${name}', which agent '${agent.name}' does not have`,
          {
            details: { tool: toolName ?? name },
            code: ErrorCode.TOOL_NOT_FOUND,
          },
        );
      }
      agent = worker;
      place = { executionId, store, path: `${place.path}/${part}`, afterSeq: delegation.seq };
    }
  }

  /**
   * Walk a row's agent path (`agent:A/agent:W/tool:T`) through this agent's
   * workers; throws TOOL_NOT_FOUND naming a missing tool. The tool a row is
   * at may be missing only when the row is marked as written for a tool its
   * agent did not have then (TOOL_MISSING): re-entered, the model is answered
   * again that it does not exist. Its state is read only then.
   */
  private async resolveTool(store: Checkpointer, row: Checkpoint): Promise<void> {
    const parts = row.agentPath.split('/');
    if (parts[0] !== this.path) {
      throw new CheckpointError(`row belongs to '${parts[0]}', not to ${this.path}`);
    }
    let agent: Agent = this;
    for (const [i, part] of parts.entries()) {
      if (i === 0) continue;
      const [kind, name] = [part.slice(0, part.indexOf(':')), part.slice(part.indexOf(':') + 1)];
      if (kind === 'agent') {
        const w = agent.workers.get(name);
        if (!w)
          throw new CheckpointError(
            `the paused run needs worker agent '${name}', which agent '${agent.name}' does not have`,
            { details: { tool: name } },
          );
        agent = w;
      } else if (kind === 'tool') {
        if (!agent.tools.has(name) && !(i === parts.length - 1 && (await writtenMissing(store, row, name)))) {
          throw new CheckpointError(`the run needs tool '${name}', which agent '${agent.name}' does not have`, {
            details: { tool: name },
            code: ErrorCode.TOOL_NOT_FOUND,
          });
        }
      }
    }
  }
}

/** Whether `row` is a tool row written for a tool (named `segment` in its path) that its agent did not have then. */
async function writtenMissing(store: Checkpointer, row: Checkpoint, segment: string): Promise<boolean> {
  if (row.step !== 'tool_call') return false;
  const state = (await kept(store.readState(row))) as RunState;
  return state[TOOL_MISSING] === true && typeof state.toolName === 'string' && toolSegment(state.toolName) === segment;
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
 * A run a plane holds is resumed through that plane's claim: with no guard
 * installed (no `connectPlane`, no claim guard of the agent's own) it is
 * refused, unless the caller gives the fleet-wide claim up with `withoutPlane`.
 */
async function refuseOffPlane(store: Checkpointer, executionId: string, options: ResumeOptions): Promise<void> {
  if (options.withoutPlane !== true && (await store.heldByPlane(executionId))) throw new NotConnected(executionId);
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
