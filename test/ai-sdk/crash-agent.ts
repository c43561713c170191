/**
 * The agent of the AI SDK crash test: a model from @ai-sdk/openai-compatible
 * (through waymark/ai-sdk) at a loopback server, and an idempotent `charge`
 * tool that appends to a ledger file no crash rolls back.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Agent, idempotent, tool, type Checkpointer, type FaultHook } from '../../client/index.js';
import { fromAISDK } from '../../client/ai-sdk/index.js';
import type { FakeHandler } from '../helpers/openai-server.js';

export const charges = (ledger: string): { order: string; pid: number }[] =>
  existsSync(ledger)
    ? readFileSync(ledger, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

export function crashAgent(o: {
  url: string;
  store: Checkpointer;
  ledger: string;
  faults?: FaultHook;
  leaseMs?: number;
}): Agent {
  const provider = createOpenAICompatible({ name: 'loop', baseURL: o.url, apiKey: 'sk-test', includeUsage: true });
  const charge = idempotent(async function charge(order: string) {
    appendFileSync(o.ledger, JSON.stringify({ order, pid: process.pid }) + '\n');
    return { charged: order };
  });
  return new Agent({
    name: 'shop',
    model: fromAISDK(provider.chatModel('loop-model'), { backoffMs: 5, maxBackoffMs: 20 }),
    tools: [
      tool({
        name: 'charge',
        description: 'charge an order',
        parameters: z.object({ order: z.string() }),
        execute: ({ order }) => charge(order),
      }),
    ],
    checkpointer: o.store,
    faults: o.faults,
    leaseMs: o.leaseMs,
  });
}

/**
 * The server's side: turn 0 asks for the charge (with some text first), turn 1
 * answers in several pieces. Token counts say which request they answer.
 */
export const shopHandler: FakeHandler = (body, index) => {
  const messages = body.messages as { role: string }[];
  const turn = messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) {
    return {
      content: 'Charging now. ',
      toolCalls: [{ id: 'call_1', name: 'charge', arguments: '{"order":"A-7"}' }],
      usage: { prompt: 100 + index, completion: 10, cached: 40 },
    };
  }
  return {
    content: 'Order A-7 is charged and on its way.',
    usage: { prompt: 200 + index, completion: 20 },
    model: 'loop-model-2026',
  };
};
