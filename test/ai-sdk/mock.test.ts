/**
 * waymark/ai-sdk against the AI SDK's own mock model (ai/test MockLanguageModelV3):
 * messages, tools, tool calls, finish reasons, usage, streaming events, errors and retries.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  APICallError,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { simulateReadableStream } from 'ai';
import { Agent, sumUsage, tool, type RunEvent } from '../../client/index.js';
import { fromAISDK } from '../../client/ai-sdk/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

const usage = (input: number, output: number, cached = 0): LanguageModelV3Usage => ({
  inputTokens: { total: input, noCache: input - cached, cacheRead: cached, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const gen = (
  content: LanguageModelV3GenerateResult['content'],
  u = usage(10, 5),
  unified: 'stop' | 'tool-calls' | 'error' | 'length' = 'stop',
): LanguageModelV3GenerateResult => ({
  content,
  finishReason: { unified, raw: unified },
  usage: u,
  warnings: [],
});
const add = tool({
  name: 'add',
  description: 'add numbers',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

describe('waymark/ai-sdk over MockLanguageModelV3', () => {
  it('maps tools, tool calls, tool results and messages both ways through a real agent run; usage is recorded per call', async () => {
    const mock = new MockLanguageModelV3({
      provider: 'mock',
      modelId: 'm-1',
      doGenerate: [
        gen(
          [
            { type: 'text', text: 'let me add' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":2,"b":3}' },
          ],
          usage(100, 20, 60),
          'tool-calls',
        ),
        gen([{ type: 'text', text: 'the sum is 5' }], usage(130, 7)),
      ],
    });
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const r = await new Agent({
      name: 'calc',
      model: fromAISDK(mock),
      tools: [add],
      checkpointer: store,
      system: 'be exact',
    }).run('2+3?');
    expect(r).toMatchObject({ status: 'completed', output: 'the sum is 5' });
    const first = mock.doGenerateCalls[0];
    expect(first.tools).toEqual([
      {
        type: 'function',
        name: 'add',
        description: 'add numbers',
        inputSchema: expect.objectContaining({
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
        }),
      },
    ]);
    expect(first.toolChoice).toEqual({ type: 'auto' });
    expect(mock.doGenerateCalls[1].prompt).toEqual([
      { role: 'system', content: 'be exact' },
      { role: 'user', content: [{ type: 'text', text: '2+3?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'let me add' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: { a: 2, b: 3 } },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'add', output: { type: 'text', value: '5' } }],
      },
    ]);
    const rows = await store.list(r.executionId);
    expect(rows.map((x) => x.step)).toEqual(['llm_call', 'tool_call', 'llm_call', 'run_end']);
    expect(rows[1].nodeOutput).toEqual({
      usage: [
        {
          model: 'm-1',
          agentPath: 'agent:calc',
          turn: 0,
          inputTokens: 100,
          outputTokens: 20,
          cachedInputTokens: 60,
          finishReason: 'tool-calls',
        },
      ],
    });
    expect(rows[3].nodeOutput).toMatchObject({
      output: 'the sum is 5',
      usage: [{ turn: 1, inputTokens: 130, outputTokens: 7 }],
    });
    expect(sumUsage(rows)).toEqual({
      calls: 2,
      inputTokens: 230,
      outputTokens: 27,
      cachedInputTokens: 60,
      models: { 'm-1': 2 },
      byModel: { 'm-1': { calls: 2, inputTokens: 230, outputTokens: 27, cachedInputTokens: 60 } },
    });
    await store.close();
  });

  it('streams: onEvent sees step-start, text deltas, the tool call, its result and the end, in order; rows are the same as without streaming', async () => {
    const chunks = (parts: LanguageModelV3StreamPart[]) => ({
      stream: simulateReadableStream({ chunks: parts, chunkDelayInMs: null }),
    });
    const mock = new MockLanguageModelV3({
      modelId: 'm-s',
      doStream: [
        chunks([
          { type: 'stream-start', warnings: [] },
          { type: 'response-metadata', modelId: 'm-s-2026' },
          { type: 'tool-input-start', id: 'c1', toolName: 'add' },
          { type: 'tool-input-delta', id: 'c1', delta: '{"a":1,"b":1}' },
          { type: 'tool-input-end', id: 'c1' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":1,"b":1}' },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(40, 9) },
        ]),
        chunks([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'it is ' },
          { type: 'text-delta', id: 't', delta: '2' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(50, 3) },
        ]),
      ],
    });
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const events: RunEvent[] = [];
    const r = await new Agent({ name: 'calc', model: fromAISDK(mock), tools: [add], checkpointer: store }).run('1+1?', {
      onEvent: (e) => events.push(e),
    });
    expect(r).toMatchObject({ status: 'completed', output: 'it is 2' });
    expect(mock.doGenerateCalls.length).toBe(0);
    expect(events.map((e) => (e.type === 'text-delta' ? `delta:${e.delta}` : e.type))).toEqual([
      'step-start',
      'tool-call',
      'tool-result',
      'step-start',
      'delta:it is ',
      'delta:2',
      'end',
    ]);
    const rows = await store.list(r.executionId);
    expect(events[0]).toMatchObject({ committed: true, checkpointId: rows[0].id, reentered: false, turn: 0 });
    expect(events[1]).toMatchObject({
      committed: true,
      checkpointId: rows[1].id,
      call: { id: 'c1', name: 'add', arguments: { a: 1, b: 1 } },
    });
    expect(events[2]).toMatchObject({ committed: false, content: '2' });
    expect(events[4]).toMatchObject({ committed: false });
    expect(events[6]).toMatchObject({ type: 'end', result: { status: 'completed', output: 'it is 2' } });
    expect(rows.map((x) => x.step)).toEqual(['llm_call', 'tool_call', 'llm_call', 'run_end']);
    expect(sumUsage(rows)).toMatchObject({
      calls: 2,
      inputTokens: 90,
      outputTokens: 12,
      models: { 'm-s-2026': 1, 'm-s': 1 },
    });
    await store.close();
  });

  it('a listener that throws does not change the run', async () => {
    const mock = new MockLanguageModelV3({
      doStream: {
        stream: simulateReadableStream<LanguageModelV3StreamPart>({
          chunks: [
            { type: 'text-delta', id: 't', delta: 'fine' },
            { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(1, 1) },
          ],
          chunkDelayInMs: null,
        }),
      },
    });
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const r = await new Agent({ name: 'a', model: fromAISDK(mock), checkpointer: store }).run('hi', {
      onEvent: () => {
        throw new Error('listener bug');
      },
    });
    expect(r).toMatchObject({ status: 'completed', output: 'fine' });
    await store.close();
  });

  it('retries a retryable APICallError (honouring Retry-After), not a 4xx; the last error is a MODEL_ERROR with the status', async () => {
    const apiError = (status: number, retryable: boolean, headers: Record<string, string> = {}) =>
      new APICallError({
        message: `status ${status}`,
        url: 'http://x',
        requestBodyValues: {},
        statusCode: status,
        isRetryable: retryable,
        responseHeaders: headers,
      });
    let calls = 0;
    const flaky = new MockLanguageModelV3({
      doGenerate: async () => {
        calls++;
        if (calls === 1) throw apiError(429, true, { 'Retry-After': '0.05' });
        if (calls === 2) throw apiError(503, true);
        return gen([{ type: 'text', text: 'ok' }]);
      },
    });
    const t0 = Date.now();
    expect(
      await fromAISDK(flaky, { backoffMs: 5, maxBackoffMs: 20 }).generate({
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
      }),
    ).toMatchObject({ content: 'ok' });
    expect(calls).toBe(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(50);

    let n = 0;
    const down = new MockLanguageModelV3({
      doGenerate: async () => {
        n++;
        throw apiError(500, true);
      },
    });
    await expect(
      fromAISDK(down, { maxRetries: 2, backoffMs: 1, maxBackoffMs: 2 }).generate({ messages: [], tools: [] }),
    ).rejects.toMatchObject({ code: 'MODEL_ERROR', details: { status: 500 } });
    expect(n).toBe(3);

    let m = 0;
    const unauthorized = new MockLanguageModelV3({
      doGenerate: async () => {
        m++;
        throw apiError(401, false);
      },
    });
    await expect(fromAISDK(unauthorized, { backoffMs: 1 }).generate({ messages: [], tools: [] })).rejects.toMatchObject(
      { code: 'MODEL_ERROR', details: { status: 401 } },
    );
    expect(m).toBe(1);
  });

  it('finish reason error and malformed tool input are MODEL_ERRORs; a run fails with MODEL_ERROR in its marker', async () => {
    const errored = new MockLanguageModelV3({ doGenerate: gen([], usage(1, 0), 'error') });
    await expect(fromAISDK(errored).generate({ messages: [], tools: [] })).rejects.toMatchObject({
      code: 'MODEL_ERROR',
    });
    const bad = new MockLanguageModelV3({
      doGenerate: gen(
        [{ type: 'tool-call', toolCallId: 'x', toolName: 'add', input: '{oops' }],
        usage(1, 1),
        'tool-calls',
      ),
    });
    await expect(fromAISDK(bad).generate({ messages: [], tools: [] })).rejects.toThrow(
      /malformed arguments for tool 'add'/,
    );
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const r = await new Agent({ name: 'a', model: fromAISDK(bad), tools: [add], checkpointer: store }).run('x');
    expect(r).toMatchObject({ status: 'failed', error: { code: 'MODEL_ERROR' } });
    await store.close();
  });

  it('length finish reason is kept; a stream error before any text is retried, after text is not', async () => {
    const cut = new MockLanguageModelV3({
      doGenerate: gen([{ type: 'text', text: 'trunc' }], usage(3, 100), 'length'),
    });
    expect(await fromAISDK(cut).generate({ messages: [], tools: [] })).toMatchObject({
      content: 'trunc',
      finishReason: 'length',
    });
    const boom = new APICallError({ message: 'reset', url: 'http://x', requestBodyValues: {}, isRetryable: true });
    let s = 0;
    const early = new MockLanguageModelV3({
      doStream: async () => {
        s++;
        const parts: LanguageModelV3StreamPart[] =
          s === 1
            ? [{ type: 'error', error: boom }]
            : [
                { type: 'text-delta', id: 't', delta: 'ok' },
                { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(1, 1) },
              ];
        return { stream: simulateReadableStream({ chunks: parts, chunkDelayInMs: null }) };
      },
    });
    const deltas: string[] = [];
    expect(
      await fromAISDK(early, { backoffMs: 1 }).stream!({ messages: [], tools: [] }, (p) => deltas.push(p.delta)),
    ).toMatchObject({ content: 'ok' });
    expect(s).toBe(2);
    let l = 0;
    const late = new MockLanguageModelV3({
      doStream: async () => {
        l++;
        return {
          stream: simulateReadableStream<LanguageModelV3StreamPart>({
            chunks: [
              { type: 'text-delta', id: 't', delta: 'par' },
              { type: 'error', error: boom },
            ],
            chunkDelayInMs: null,
          }),
        };
      },
    });
    await expect(
      fromAISDK(late, { backoffMs: 1 }).stream!({ messages: [], tools: [] }, () => {}),
    ).rejects.toMatchObject({ code: 'MODEL_ERROR' });
    expect(l).toBe(1);
  });

  it('refuses a model of another spec version, naming it', () => {
    expect(() => fromAISDK({ specificationVersion: 'v2', provider: 'p', modelId: 'm' } as never)).toThrow(
      /LanguageModelV3.*'v2'/,
    );
    try {
      fromAISDK({ specificationVersion: 'v2', provider: 'p', modelId: 'm' } as never);
    } catch (e) {
      expect(e).toMatchObject({ code: 'UNSUPPORTED_MODEL', details: { specificationVersion: 'v2' } });
    }
    expect.assertions(2);
  });
});
