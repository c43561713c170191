/**
 * The agent of the tool-call id tests: a model whose first reply asks for two
 * `charge` calls under the id the test gives (a provider that sends empty or
 * repeated tool call ids), as an AI SDK MockLanguageModelV3 or as a plain
 * waymark Model, and an idempotent `charge` that appends to a ledger file no
 * crash rolls back.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { LanguageModelV3Usage } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import {
  Agent,
  idempotent,
  tool,
  type Checkpointer,
  type FaultHook,
  type Model,
  type ModelRequest,
} from '../../client/index.js';
import { fromAISDK } from '../../client/ai-sdk/index.js';

const usage: LanguageModelV3Usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

export const ledgerOf = (ledger: string): string[] =>
  existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];

/** Turn 0: two charge calls, both under `callId`; turn 1: a text answer. */
export function twoCallsModel(callId: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider: 'mock',
    modelId: 'dup-ids',
    doGenerate: async (o) => {
      if (!o.prompt.some((m) => m.role === 'assistant')) {
        return {
          content: [
            { type: 'tool-call', toolCallId: callId, toolName: 'charge', input: '{"order":"A"}' },
            { type: 'tool-call', toolCallId: callId, toolName: 'charge', input: '{"order":"B"}' },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'text', text: 'both charged' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
  });
}

/** The same turns as a plain Model (no AI SDK between it and the agent); `requests` holds what it was asked. */
export function plainTwoCallsModel(callId: string): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    name: 'dup-ids',
    requests,
    async generate(request) {
      requests.push(request);
      if (!request.messages.some((m) => m.role === 'assistant')) {
        return {
          content: null,
          toolCalls: [
            { id: callId, name: 'charge', arguments: { order: 'A' } },
            { id: callId, name: 'charge', arguments: { order: 'B' } },
          ],
        };
      }
      return { content: 'both charged', toolCalls: [] };
    },
  };
}

export function twoCallsAgent(o: {
  model: MockLanguageModelV3 | Model;
  store: Checkpointer;
  ledger: string;
  faults?: FaultHook;
}): Agent {
  const charge = idempotent(async function charge(order: string) {
    appendFileSync(o.ledger, `${order}\n`);
    return { charged: order };
  });
  return new Agent({
    name: 'shop',
    model: o.model instanceof MockLanguageModelV3 ? fromAISDK(o.model) : o.model,
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
    leaseMs: 1_000,
  });
}
