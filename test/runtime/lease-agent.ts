/**
 * The agent of the lease and recovery tests: `steps` turns, each calling the
 * `work` tool once, whose idempotent side effect appends a line to a file;
 * every model call appends a line to another. Both files are shared by every
 * process, so a test counts model calls and effects across processes.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import {
  Agent,
  currentRun,
  idempotent,
  ScriptedModel,
  tool,
  type Checkpointer,
  type FaultHook,
} from '../../client/index.js';

export interface LeaseAgentOptions {
  store: Checkpointer;
  callsFile: string;
  effectsFile: string;
  leaseMs: number;
  faults?: FaultHook;
  /** Block this process's event loop inside the first tool call until this file exists (a stalled runner). */
  stallUntil?: string;
  /**
   * Hold the first tool call (awaiting, so the renewal timer keeps running)
   * until this file exists; `<file>.holding` is written when the hold starts.
   */
  holdUntil?: string;
  /** Called at the start of each `work` tool call with its step (before its effect). */
  onTool?: (step: number) => Promise<void>;
  /** Each model call takes this long (a slow model: runners overlap, the renewal timer runs). */
  modelDelayMs?: number;
}

/** The input of a run with `steps` tool turns. */
export const leaseInput = (steps: number) => `steps ${steps}`;

export function leaseAgent(o: LeaseAgentOptions): Agent {
  const model = new ScriptedModel(({ turn, lastUser }) => {
    const steps = Number(/steps (\d+)/.exec(lastUser)?.[1] ?? 1);
    appendFileSync(o.callsFile, `${currentRun()?.executionId} ${turn} ${process.pid}\n`);
    return turn < steps
      ? { toolCalls: [{ name: 'work', arguments: { step: turn } }] }
      : { content: `did ${steps} steps` };
  });
  let stalled = false;
  let held = false;
  const effect = idempotent(
    async (executionId: string, step: number) => {
      appendFileSync(o.effectsFile, `${executionId} ${step} ${process.pid}\n`);
      return { step };
    },
    { key: (executionId, step) => `effect:${executionId}:${step}` },
  );
  const work = tool({
    name: 'work',
    description: 'Do one step of work',
    parameters: z.object({ step: z.number() }),
    execute: async ({ step }) => {
      await o.onTool?.(step);
      if (o.stallUntil && !stalled) {
        stalled = true;
        // a synchronous stall: the lease renewal timer cannot run either
        const cell = new Int32Array(new SharedArrayBuffer(4));
        while (!existsSync(o.stallUntil)) Atomics.wait(cell, 0, 0, 20);
      }
      if (o.holdUntil && !held) {
        held = true;
        writeFileSync(`${o.holdUntil}.holding`, '');
        while (!existsSync(o.holdUntil)) await new Promise((r) => setTimeout(r, 20));
      }
      return effect(currentRun()!.executionId, step);
    },
  });
  if (o.modelDelayMs) {
    const generate = model.generate.bind(model);
    model.generate = async (request) => {
      await new Promise((r) => setTimeout(r, o.modelDelayMs));
      return generate(request);
    };
  }
  return new Agent({
    name: 'lease-bot',
    model,
    tools: [work],
    checkpointer: o.store,
    faults: o.faults,
    leaseMs: o.leaseMs,
  });
}
