/**
 * A long run as an agent writes it (bench/run-page.ts and test/ui/long-run.test.ts): a supervisor through the real
 * runtime, each turn a model call with a few hundred characters of text and a tool call with arguments and a
 * result of a few hundred characters; every fifth turn it delegates to a worker agent (its rows nested under the
 * supervisor's path: it refunds through an `idempotent` charge, an idempotency entry each), and one turn pauses for
 * a manager and is resumed.
 */
import { z } from 'zod';
import { Agent, idempotent, interrupt, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { randomText } from './text.js';

/**
 * Writes the run `executionId` into `store`, ending completed: `rows` rows when it is of the form 2T + 3⌊T/5⌋ + 4
 * (500: T = 191), else the nearest count below it. Returns the turn of its pause and the agent (to fork the run).
 */
export async function writeLongRun(
  store: Checkpointer,
  executionId: string,
  rows = 500,
): Promise<{ pauseTurn: number; agent: Agent }> {
  // a plain turn writes 2 rows (llm_call, tool_call), a delegated one 5 (the delegating call, its worker's two model
  // calls and its tool call); the run's final answer, its end marker, the pause and the tool's call again after it: 4
  let turns = 2;
  while (2 * (turns + 1) + 3 * Math.floor((turns + 1) / 5) + 4 <= rows) turns++;
  const pauseTurn = Math.min(40, Math.floor(turns / 2) - (Math.floor(turns / 2) % 5 === 4 ? 1 : 0));
  const text = (n: number, ...seed: number[]) => randomText(n, ...seed).replace(/(.{12})/g, '$1 ');
  const lookup = tool({
    name: 'lookup',
    description: 'Look an order up',
    parameters: z.object({ order: z.string(), note: z.string() }),
    execute: ({ order }) => {
      const turn = Number(order.slice(6));
      if (turn === pauseTurn) {
        const d = interrupt('manager_approval', { order, amount: 9000, note: text(200, turn, 9) });
        if (!d.approved) return { declined: true };
      }
      return { order, status: 'shipped', history: text(400, turn, 2) };
    },
  });
  // the worker's refunds charge through an idempotent effect: the run records an entry with its receipt for each
  const charge = idempotent(async function charge(order: string, amount: number) {
    return { order, amount, receipt: text(200, Number(order.slice(6)), 10) };
  });
  const refund = tool({
    name: 'refund',
    description: 'Refund an order',
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: async ({ order, amount }) => ({ refunded: true, charge: await charge(order, amount) }),
  });
  const worker = new Agent({
    name: 'refund-bot',
    model: new ScriptedModel(({ turn, lastUser, toolResults }) =>
      turn === 0
        ? { toolCalls: [{ name: 'refund', arguments: { order: lastUser.split(' ')[0], amount: 100 + turn } }] }
        : { content: `worker: ${toolResults[0]?.content.slice(0, 200) ?? ''}` },
    ),
    tools: [refund],
  });
  const desk = new Agent({
    name: 'desk',
    kind: 'supervisor',
    maxTurns: turns + 2,
    model: new ScriptedModel(({ turn }) => {
      if (turn >= turns) return { content: text(300, turn, 3) };
      if (turn % 5 === 4)
        return {
          content: text(200, turn, 4),
          toolCalls: [{ name: 'refunds', arguments: { task: `order-${turn} ${text(300, turn, 5)}` } }],
        };
      return {
        content: text(300, turn, 6),
        toolCalls: [{ name: 'lookup', arguments: { order: `order-${turn}`, note: text(250, turn, 8) } }],
      };
    }),
    tools: [lookup, worker.asTool({ name: 'refunds' })],
    checkpointer: store,
  });
  let r = await desk.run(text(300, 0, 1), { executionId });
  while (r.status === 'paused') r = await desk.resume(executionId, { approved: true });
  if (r.status !== 'completed') throw new Error(`the long run ended ${r.status}`);
  return { pauseTurn, agent: desk };
}
