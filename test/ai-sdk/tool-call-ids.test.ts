/**
 * A provider that sends empty or repeated tool call ids (some OpenAI-compatible
 * servers do) must not make a resume re-run the wrong call: the process is
 * SIGKILLed after the second call's row committed, before it ran; the resume
 * runs that call, once, and answers each call exactly once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { fromAISDK } from '../../client/ai-sdk/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { ledgerOf, twoCallsAgent, twoCallsModel } from './tool-ids-agent.js';

const CHILD = new URL('./tool-ids-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-aisdk-ids-');
afterAll(() => tmp.cleanup());

describe('AI SDK tool calls that share an id', () => {
  for (const [label, callId] of [
    ['empty', ''],
    ['repeated', 'call_1'],
  ] as const) {
    it(`two calls with ${label} ids, killed before the second runs: resume runs the second once, never the first again, and answers each call once`, async () => {
      const db = tmp.file(`${label}.db`);
      const ledger = tmp.file(`${label}.ledger`);
      const id = `dup-${label}`;
      const a = await runTs(CHILD, [db, ledger, id, callId]);
      expect(a.signal, a.stderr).toBe('SIGKILL');
      expect(ledgerOf(ledger)).toEqual(['A']);

      const store = new SqliteCheckpointer({ path: db });
      try {
        await untilLeaseFree(store, id);
        const model = twoCallsModel(callId);
        const r = await twoCallsAgent({ model, store, ledger }).resume(id);
        expect(r).toMatchObject({ status: 'completed', output: 'both charged' });
        // each order charged once, across both processes
        expect(ledgerOf(ledger)).toEqual(['A', 'B']);
        // the model is told one result per call, in order, and every call id it is shown is distinct
        const prompt = model.doGenerateCalls.at(-1)!.prompt;
        const calls = prompt.flatMap((m) =>
          m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call') : [],
        );
        const results = prompt.flatMap((m) =>
          m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : [],
        );
        expect(calls.map((c) => c.input)).toEqual([{ order: 'A' }, { order: 'B' }]);
        expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(2);
        expect(results.map((x) => [x.toolCallId, x.output])).toEqual([
          [calls[0].toolCallId, { type: 'text', value: '{"charged":"A"}' }],
          [calls[1].toolCallId, { type: 'text', value: '{"charged":"B"}' }],
        ]);
      } finally {
        await store.close();
      }
    });
  }

  it('a streamed reply gets the same treatment: calls with empty or repeated ids come out with distinct ids, a distinct provider id is kept', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'tool-call', toolCallId: '', toolName: 'charge', input: '{"order":"A"}' },
      { type: 'tool-call', toolCallId: 'kept', toolName: 'charge', input: '{"order":"B"}' },
      { type: 'tool-call', toolCallId: 'x', toolName: 'charge', input: '{"order":"C"}' },
      { type: 'tool-call', toolCallId: 'x', toolName: 'charge', input: '{"order":"D"}' },
      { type: 'tool-call', toolCallId: '', toolName: 'charge', input: '{"order":"E"}' },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
      },
    ];
    const model = fromAISDK(
      new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks: parts }) }) }),
    );
    const reply = await model.stream({ messages: [{ role: 'user', content: 'go' }], tools: [] }, () => {});
    const ids = reply.toolCalls.map((c) => c.id);
    expect(reply.toolCalls.map((c) => (c.arguments as { order: string }).order)).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(ids[1]).toBe('kept');
    expect(ids.every((id) => id !== '')).toBe(true);
    expect(new Set(ids).size).toBe(5);
  });
});
