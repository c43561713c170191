/**
 * The agent of the edge tests: a supervisor `desk` that delegates one task to
 * a worker agent `payer`, whose `pay` tool pauses twice (manager, then
 * shipping) with an idempotent charge between the pauses and an idempotent
 * shipment after them. Every effect and every model call appends a line to a
 * file in `dir` that no crash rolls back, so a test counts them across
 * processes.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import {
  Agent,
  currentRun,
  idempotent,
  interrupt,
  ScriptedModel,
  tool,
  type Checkpointer,
  type FaultHook,
} from '../../client/index.js';

export interface EdgesAgentOptions {
  store: Checkpointer;
  dir: string;
  leaseMs: number;
  faults?: FaultHook;
  /** The supervisor's name for the tool that delegates to the worker (default `payments`): a redeploy may rename it. */
  delegateAs?: string;
  /** Build the worker without its `pay` tool (a redeploy that dropped it). */
  payerWithoutPay?: boolean;
  /**
   * The model of `by` first calls a tool of this name, which its agent does not
   * have (a name a model made up), then its usual tool, in its first reply.
   */
  strayCall?: { by: 'desk' | 'payer'; name: string };
}

/** `strayCall` as edges-child.ts takes it from the environment: `STRAY_CALL=desk:lookup` (the name may hold ':' and '/'). */
export function strayCallOf(env: string | undefined): EdgesAgentOptions['strayCall'] {
  if (!env) return undefined;
  const at = env.indexOf(':');
  return { by: env.slice(0, at) as 'desk' | 'payer', name: env.slice(at + 1) };
}

export interface EdgeLine {
  kind: string;
  executionId: string;
  what: string;
  pid: number;
}

const append = (dir: string, file: string, line: string) => appendFileSync(join(dir, file), `${line}\n`);

function lines(dir: string, file: string): EdgeLine[] {
  const path = join(dir, file);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [kind, executionId, what, pid] = l.split(' ');
      return { kind, executionId, what, pid: Number(pid) };
    });
}

/** The effects (`charge`, `ship`) of every process, in order. */
export const effectsOf = (dir: string, executionId?: string) =>
  lines(dir, 'effects.log').filter((l) => executionId === undefined || l.executionId === executionId);
/** The model calls (`desk`/`payer`, turn) of every process, in order. */
export const modelCallsOf = (dir: string, executionId?: string) =>
  lines(dir, 'model.log').filter((l) => executionId === undefined || l.executionId === executionId);

export function edgesAgent(o: EdgesAgentOptions): { desk: Agent; payer: Agent } {
  const charge = idempotent(
    async (order: string) => {
      append(o.dir, 'effects.log', `charge ${currentRun()!.executionId} ${order} ${process.pid}`);
      return { charged: order };
    },
    { key: (order) => `charge:${order}` },
  );
  const ship = idempotent(
    async (order: string) => {
      append(o.dir, 'effects.log', `ship ${currentRun()!.executionId} ${order} ${process.pid}`);
      return { shipped: order };
    },
    { key: (order) => `ship:${order}` },
  );
  const pay = tool({
    name: 'pay',
    description: 'Charge an order and ship it, with two approvals',
    parameters: z.object({ order: z.string() }),
    execute: async ({ order }) => {
      const first = interrupt('manager', { order });
      if (!first.approved) return { order, declined: 'manager' };
      const receipt = await charge(order);
      const second = interrupt('shipping', { order, approver: first.metadata.who ?? null });
      if (!second.approved) return { order, receipt, declined: 'shipping' };
      await ship(order);
      return { order, receipt, shipped: true, by: [first.metadata.who ?? null, second.metadata.who ?? null] };
    },
  });
  const logged = (name: string, rule: ConstructorParameters<typeof ScriptedModel>[0]) =>
    new ScriptedModel((ctx) => {
      append(o.dir, 'model.log', `${name} ${currentRun()?.executionId} ${ctx.turn} ${process.pid}`);
      return rule(ctx);
    });
  const stray = (by: 'desk' | 'payer') => (o.strayCall?.by === by ? [{ name: o.strayCall.name, arguments: {} }] : []);
  const payerModel = logged('payer', ({ turn, lastUser, toolResults }) =>
    turn === 0
      ? {
          toolCalls: [
            ...stray('payer'),
            { name: 'pay', arguments: { order: /order (\S+)/.exec(lastUser)?.[1] ?? '0' } },
          ],
        }
      : { content: `payer: ${toolResults[0]?.content}` },
  );
  const payer = new Agent({
    name: 'payer',
    model: payerModel,
    tools: o.payerWithoutPay ? [] : [pay],
    leaseMs: o.leaseMs,
    faults: o.faults,
  });
  const deskModel = logged('desk', ({ turn, toolResults }) =>
    turn === 0
      ? { toolCalls: [...stray('desk'), { name: o.delegateAs ?? 'payments', arguments: { task: 'pay order 1042' } }] }
      : { content: `desk: ${toolResults[0]?.content}` },
  );
  const desk = new Agent({
    name: 'desk',
    kind: 'supervisor',
    model: deskModel,
    tools: [payer.asTool({ name: o.delegateAs ?? 'payments' })],
    checkpointer: o.store,
    leaseMs: o.leaseMs,
    faults: o.faults,
  });
  return { desk, payer };
}
