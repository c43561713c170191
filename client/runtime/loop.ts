/**
 * The agent loop: model calls and tool calls, one row before each, from a
 * fresh start or re-entered at a saved row (the rules are in agent.ts's
 * header); tool invocation (a thrown error is a result the model sees, a
 * pause is recorded and propagated, a worker agent runs nested under the
 * tool's row); and the outermost runner, which holds the lease and writes
 * the run-end marker. `Agent` (agent.ts) is the facade: it checks the call,
 * takes the lease (resume.ts claims or takes a resumed run), then hands a
 * level to this.
 */
import { storableText, type Json } from '../../shared/json.js';
import { ErrorCode, hasCode, WaymarkError } from '../../shared/errors.js';
import type { Checkpoint } from '../../shared/rows.js';
import { toolFailureText } from '../../shared/tool-result.js';
import type { Checkpointer, CheckpointInput } from '../checkpointer.js';
import { CheckpointError, ResumeRequired } from '../errors.js';
import { isLeaseLoss, type RunLease } from './lease.js';
import type { FaultHook } from '../faults.js';
import {
  distinctCallIds,
  type Message,
  type Model,
  type ModelReply,
  type ToolCall,
  type ToolSpec,
} from '../models/model.js';
import { currentRun, withRun, type RunContext, type ToolScope } from './context.js';
import { parseArguments, toolSegment, toolSpec, type Tool } from './tool.js';
import {
  emit,
  escapes,
  freeze,
  kept,
  lastToolCalls,
  NOT_RUN,
  PauseOutcome,
  stripResumes,
  stripTool,
  TOOL_MISSING,
  toolCallIndex,
  withUsage,
} from './run-state.js';
import type { Entry, Level, Place, RunEvent, RunResult, RunState } from './types.js';

/** What the loop of one agent needs: its model, tools and workers, as the Agent was made with them. */
export interface AgentLoopOptions {
  name: string;
  kind: 'agent' | 'supervisor';
  model: Model;
  tools: Map<string, Tool>;
  /** The loops of worker agents, by the tool name that delegates to them. */
  workersByTool: Map<string, AgentLoop>;
  system?: string;
  maxTurns: number;
  fault: FaultHook;
}

/** One agent's loop (an Agent holds one; a worker's is reached through its supervisor's). */
export class AgentLoop {
  readonly name: string;
  readonly kind: 'agent' | 'supervisor';
  private readonly model: Model;
  /** The tools the model may call, by name. */
  readonly tools: ReadonlyMap<string, Tool>;
  /** The loops of worker agents, by the tool name that delegates to them. */
  readonly workersByTool: ReadonlyMap<string, AgentLoop>;
  /** The same loops by agent name, as a row's path names them (`agent:NAME`). */
  readonly workers = new Map<string, AgentLoop>();
  private readonly system?: string;
  private readonly maxTurns: number;
  private readonly fault: FaultHook;

  constructor(options: AgentLoopOptions) {
    this.name = options.name;
    this.kind = options.kind;
    this.model = options.model;
    this.tools = options.tools;
    this.workersByTool = options.workersByTool;
    for (const w of options.workersByTool.values()) this.workers.set(w.name, w);
    this.system = options.system;
    this.maxTurns = options.maxTurns;
    this.fault = options.fault;
  }

  /** This agent's path at the top of a run. */
  get path(): string {
    return `${this.kind}:${this.name}`;
  }

  private specs?: readonly ToolSpec[];
  /** What the model is told about the tools (built once). */
  private toolSpecs(): readonly ToolSpec[] {
    return (this.specs ??= Object.freeze([...this.tools.values()].map(toolSpec)));
  }

  topLevel(
    executionId: string,
    store: Checkpointer,
    prevId: string | null,
    lease: RunLease,
    onEvent?: (e: RunEvent) => void,
  ): Level {
    return { executionId, store, path: this.path, afterSeq: -1, prevId, lease, usage: [], onEvent };
  }

  initialState(input: string): RunState {
    const messages: Message[] = [];
    if (this.system) messages.push(freeze({ role: 'system', content: this.system }));
    messages.push(freeze({ role: 'user', content: input }));
    return { messages: messages as RunState['messages'], turn: 0 };
  }

  /** The outermost runner: writes the run-end marker, never for a pause. */
  async outer(level: Level, body: () => Promise<{ output: string; state: RunState }>): Promise<RunResult> {
    level.lease.start();
    let result: RunResult;
    try {
      result = await this.outerHeld(level, body);
    } finally {
      await level.lease.stop();
    }
    if (result.status === 'paused' && result.pendingInterrupt) {
      emit(level, {
        type: 'pause',
        committed: true,
        executionId: level.executionId,
        pendingInterrupt: result.pendingInterrupt,
      });
    }
    emit(level, { type: 'end', committed: true, executionId: level.executionId, result });
    return result;
  }

  private async outerHeld(level: Level, body: () => Promise<{ output: string; state: RunState }>): Promise<RunResult> {
    const lease = level.lease;
    const ctx: RunContext = {
      executionId: level.executionId,
      store: level.store,
      agentPath: level.path,
      tool: null,
      lease,
    };
    return withRun(ctx, async () => {
      let done: { output: string; state: RunState };
      try {
        done = await body();
      } catch (e) {
        if (e instanceof PauseOutcome) {
          lease.ended = true;
          return { status: 'paused', executionId: level.executionId, pendingInterrupt: e.pending };
        }
        // an effect that ran and cannot be recorded escapes too, but after a failed marker: left running, every
        // recoverRuns pass (a watch: every interval) would resume the run and run the effect again
        const unrecorded = hasCode(e, ErrorCode.EFFECT_NOT_RECORDED);
        if (escapes(e) && !unrecorded) throw e;
        const error = {
          code: (e as { code?: string }).code ?? ErrorCode.RUN_FAILED,
          message: (e as Error).message ?? String(e),
        };
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
        } catch (refused) {
          // cancelled or taken over meanwhile: that is why this runner stops (RUN_CANCELLED / LEASE_LOST), not the step's error
          if (isLeaseLoss(refused)) throw refused;
          // the store itself failed (or the execution is gone): no marker, the run stays resumable from its newest row
          throw e;
        }
        if (unrecorded) throw e;
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

  private async checkpoint(
    level: Level,
    input: Omit<CheckpointInput, 'executionId' | 'status' | 'prevId'>,
  ): Promise<Checkpoint> {
    const nodeOutput = withUsage(level, null);
    const row = await kept(
      level.store.put(
        {
          ...input,
          executionId: level.executionId,
          prevId: level.prevId,
          status: 'completed',
          ...(nodeOutput ? { nodeOutput } : {}),
        },
        { lease: level.lease.lease },
      ),
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
      emit(level, {
        type: 'text-delta',
        committed: false,
        executionId: level.executionId,
        agentPath: level.path,
        turn: state.turn,
        delta: part.delta,
      });
      if (++parts === 1) this.fault('runtime.midStream');
    });
  }

  async loop(level: Level, start: RunState, first: Entry): Promise<{ output: string; state: RunState }> {
    let state = start;
    let entry = first;
    for (;;) {
      if (entry.kind === 'model') {
        if (entry.write) {
          await this.checkpoint(level, {
            nodeId: `turn:${state.turn}`,
            turn: state.turn,
            step: 'llm_call',
            agentPath: level.path,
            state,
          });
        }
        // after the row: it holds the results of the tools just run, so a resume (with a higher maxTurns) goes on
        // from them instead of running the last tools again
        if (state.turn >= this.maxTurns) {
          throw new WaymarkError(
            ErrorCode.MAX_TURNS,
            `agent '${this.name}' reached its limit of ${this.maxTurns} turn${this.maxTurns === 1 ? '' : 's'}`,
          );
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
        // each call its own id: a resume finds the call a tool row names by it (distinctCallIds)
        const toolCalls = distinctCallIds(reply.toolCalls);
        const assistant = freeze({
          role: 'assistant' as const,
          content: reply.content === null ? null : storableText(reply.content),
          ...(toolCalls.length ? { toolCalls } : {}),
        });
        state = { messages: [...state.messages, assistant] as RunState['messages'], turn: state.turn };
        if (!toolCalls.length) return { output: reply.content ?? '', state };
        entry = { kind: 'tool', index: 0, row: null, resumes: [], single: false };
        continue;
      }
      const calls = lastToolCalls(state.messages);
      for (let i = entry.index; i < calls.length; i++) {
        const call = calls[i];
        const isEntry = i === entry.index;
        const resumes = isEntry ? entry.resumes : [];
        // a tool the agent does not have (a name the model made up): the row says so, and a resume answers it as this pass does
        const missing = !this.tools.has(call.name);
        const toolState: RunState = {
          messages: state.messages,
          turn: state.turn,
          toolName: call.name,
          toolCallId: call.id,
          ...(resumes.length ? { resumes } : {}),
          ...(missing ? { [TOOL_MISSING]: true } : {}),
        };
        const segment = missing ? toolSegment(call.name) : call.name;
        const agentPath = `${level.path}/tool:${segment}`;
        const row =
          isEntry && entry.row
            ? entry.row
            : await this.checkpoint(level, {
                nodeId: `turn:${state.turn}/tool:${segment}`,
                turn: state.turn,
                step: 'tool_call',
                agentPath,
                state: toolState,
                nodeInput: call.arguments,
              });
        emit(level, {
          type: 'tool-call',
          committed: true,
          executionId: level.executionId,
          agentPath,
          turn: state.turn,
          call,
          checkpointId: row.id,
        });
        this.fault('runtime.beforeTool');
        level.lease.check();
        const content = await this.invoke(level, call, toolState, row, resumes);
        this.fault('runtime.afterTool');
        const result = freeze({
          role: 'tool' as const,
          toolCallId: call.id,
          name: call.name,
          content: storableText(content),
        });
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
          const rest = calls
            .slice(i + 1)
            .map((c) => freeze({ role: 'tool' as const, toolCallId: c.id, name: c.name, content: NOT_RUN }));
          state = { messages: [...state.messages, ...rest] as RunState['messages'], turn: state.turn };
          break;
        }
      }
      state = { messages: state.messages, turn: state.turn + 1 };
      entry = { kind: 'model', write: true };
    }
  }

  /** Run one tool call; a thrown error is a tool result, a pause is recorded and propagated. */
  private async invoke(
    level: Level,
    call: ToolCall,
    toolState: RunState,
    row: Checkpoint,
    resumes: Json[],
  ): Promise<string> {
    const t = this.tools.get(call.name);
    if (!t) return `Tool '${call.name}' does not exist. Available: ${[...this.tools.keys()].join(', ') || 'none'}.`;
    const parsed = parseArguments(t, call.arguments);
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
      rowId: row.id,
    };
    let result: unknown;
    try {
      const worker = this.workersByTool.get(call.name);
      if (worker) {
        result = await withRun({ ...(parent ?? ctx), tool: null }, () =>
          worker.runNested(level, row, (parsed.data as { task: string }).task),
        );
      } else {
        result = await withRun(ctx, async () => t.execute(parsed.data));
      }
    } catch (e) {
      if (e instanceof PauseOutcome) throw e;
      if (escapes(e)) throw e;
      if (scope.escaped) throw scope.escaped;
      if (!scope.pause) return toolFailureText(call.name, (e as Error)?.message ?? String(e));
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
            state:
              scope.pause.index > 0
                ? { ...toolState, resumes: resumes.slice(0, scope.pause.index) }
                : stripResumes(toolState),
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
    return resultText(call.name, result);
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
    const done = own
      ? await this.reenter(level, own)
      : await this.loop(level, this.initialState(task), { kind: 'model', write: true });
    return done.output;
  }

  async reenter(level: Level, row: Checkpoint): Promise<{ output: string; state: RunState }> {
    const state = (await kept(level.store.readState(row))) as RunState;
    const step = row.step === 'fork_origin' ? (row.nodeInput as { step: Checkpoint['step'] }).step : row.step;
    if (step === 'llm_call') return this.loop(level, stripTool(state), { kind: 'model', write: false });
    if (step === 'tool_call' || (step === 'hitl_pause' && row.step === 'fork_origin')) {
      const index = toolCallIndex(state.messages, state.toolCallId);
      if (index < 0)
        throw new CheckpointError(
          `row ${row.id} names tool call '${String(state.toolCallId)}' that its history does not hold`,
        );
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

  isOwn(level: Place, agentPath: string): boolean {
    if (agentPath === level.path) return true;
    const prefix = `${level.path}/tool:`;
    return agentPath.startsWith(prefix) && !agentPath.slice(prefix.length).includes('/');
  }

  /** Newest row of this level's own path (markers skipped), walking back page by page. */
  async latestOwn(level: Place): Promise<Checkpoint | null> {
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
}

/**
 * A tool's result as the model is shown it: its JSON text. A result with no
 * JSON form (a BigInt, a cycle, a function) is named as such: the tool ran,
 * and failing the run here would make a resume run it again.
 */
function resultText(tool: string, result: unknown): string {
  let why: string;
  try {
    const text = JSON.stringify(result === undefined ? null : result);
    if (text !== undefined) return text;
    why = `a ${typeof result}`;
  } catch (e) {
    why = (e as Error)?.message ?? String(e);
  }
  return `Tool '${tool}' ran, but its result has no JSON form (${why}), so it cannot be shown.`;
}
