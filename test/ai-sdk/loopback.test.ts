/**
 * waymark/ai-sdk through @ai-sdk/openai-compatible, and OpenAIChatModel, against
 * a local OpenAI-compatible server on 127.0.0.1 (real HTTP, JSON and SSE),
 * including a child process SIGKILLed mid-stream and the run resumed here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Agent, OpenAIChatModel, sumUsage, tool, type RunEvent } from '../../client/index.js';
import { fromAISDK } from '../../client/ai-sdk/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { startFakeOpenAI, type FakeHandler, type FakeOpenAI } from '../helpers/openai-server.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { charges, crashAgent, shopHandler } from './crash-agent.js';

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

describe('AI SDK provider and OpenAIChatModel against a loopback OpenAI-compatible server', () => {
  let server: FakeOpenAI;
  let handler: FakeHandler = () => ({ content: 'unset' });
  const tmp = scratchDir('waymark-aisdk-');
  beforeAll(async () => {
    server = await startFakeOpenAI((b, i) => handler(b, i));
  });
  afterAll(async () => {
    await server.close();
    tmp.cleanup();
  });
  const provider = () =>
    createOpenAICompatible({ name: 'loop', baseURL: server.url, apiKey: 'sk-test', includeUsage: true });
  const add = tool({
    name: 'add',
    description: 'add numbers',
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => a + b,
  });
  const addHandler: FakeHandler = (body) => {
    const msgs = body.messages as { role: string }[];
    if (!msgs.some((m) => m.role === 'tool'))
      return {
        toolCalls: [{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }],
        usage: { prompt: 50, completion: 8, cached: 32 },
      };
    return { content: 'the sum is 5', usage: { prompt: 70, completion: 4 }, model: 'served-model' };
  };

  for (const mode of ['generate', 'stream'] as const) {
    it(`openai-compatible provider, ${mode}: tool call round trip, wire messages, usage in rows`, async () => {
      handler = addHandler;
      const start = server.requests.length;
      const store = new SqliteCheckpointer({ path: ':memory:' });
      const events: RunEvent[] = [];
      const agent = new Agent({
        name: 'calc',
        model: fromAISDK(provider().chatModel('loop-model')),
        tools: [add],
        checkpointer: store,
      });
      const r = await agent.run('2+3?', mode === 'stream' ? { onEvent: (e) => events.push(e) } : {});
      expect(r).toMatchObject({ status: 'completed', output: 'the sum is 5' });
      const reqs = server.requests.slice(start);
      expect(reqs.length).toBe(2);
      expect(Boolean(reqs[0].stream)).toBe(mode === 'stream');
      expect((reqs[0].tools as { function: { name: string; parameters: object } }[])[0].function).toMatchObject({
        name: 'add',
        parameters: { properties: { a: {}, b: {} } },
      });
      expect(reqs[1].messages).toEqual([
        { role: 'user', content: '2+3?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '5' },
      ]);
      const rows = await store.list(r.executionId);
      expect(sumUsage(rows)).toMatchObject({
        calls: 2,
        inputTokens: 120,
        outputTokens: 12,
        cachedInputTokens: 32,
        models: { 'loop-model': 1, 'served-model': 1 },
      });
      if (mode === 'stream') {
        expect(
          events
            .filter((e) => e.type === 'text-delta')
            .map((e) => (e as { delta: string }).delta)
            .join(''),
        ).toBe('the sum is 5');
        expect(events.map((e) => e.type).filter((t) => t !== 'text-delta')).toEqual([
          'step-start',
          'tool-call',
          'tool-result',
          'step-start',
          'end',
        ]);
      }
      await store.close();
    });
  }

  it('openai-compatible: a 429 is retried after Retry-After, a 400 is a MODEL_ERROR with its status, not retried', async () => {
    let n = 0;
    handler = () =>
      ++n === 1
        ? { status: 429, headers: { 'retry-after': '0.05' } }
        : { content: 'ok', usage: { prompt: 1, completion: 1 } };
    const m = fromAISDK(provider().chatModel('loop-model'), { backoffMs: 5, maxBackoffMs: 20 });
    expect(await m.generate({ messages: [{ role: 'user', content: 'hi' }], tools: [] })).toMatchObject({
      content: 'ok',
      finishReason: 'stop',
    });
    expect(n).toBe(2);
    n = 0;
    handler = () => (n++, { status: 400, body: JSON.stringify({ error: { message: 'bad request' } }) });
    await expect(m.generate({ messages: [{ role: 'user', content: 'hi' }], tools: [] })).rejects.toMatchObject({
      code: 'MODEL_ERROR',
      details: { status: 400 },
    });
    expect(n).toBe(1);
  });

  it('OpenAIChatModel streams: deltas in order, tool calls joined from pieces, usage and finish reason', async () => {
    handler = addHandler;
    const m = new OpenAIChatModel({
      baseUrl: server.url,
      model: 'cfg-model',
      apiKey: 'k',
      backoffMs: 5,
      maxBackoffMs: 20,
    });
    const deltas: string[] = [];
    const first = await m.stream({ messages: [{ role: 'user', content: '2+3?' }], tools: [] }, (p) =>
      deltas.push(p.delta),
    );
    expect(first).toEqual({
      content: null,
      toolCalls: [{ id: 'c1', name: 'add', arguments: { a: 2, b: 3 } }],
      finishReason: 'tool-calls',
      usage: { model: 'cfg-model', inputTokens: 50, outputTokens: 8, cachedInputTokens: 32 },
    });
    expect(server.requests.at(-1)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const second = await m.stream(
      {
        messages: [
          { role: 'user', content: '2+3?' },
          { role: 'assistant', content: null, toolCalls: first.toolCalls },
          { role: 'tool', toolCallId: 'c1', name: 'add', content: '5' },
        ],
        tools: [],
      },
      (p) => deltas.push(p.delta),
    );
    expect(deltas).toEqual(['the ', 'sum ', 'is ', '5']);
    expect(second).toMatchObject({
      content: 'the sum is 5',
      usage: { model: 'served-model', inputTokens: 70, outputTokens: 4 },
    });
    // and without streaming, the same usage is read from the JSON answer
    expect(await m.generate({ messages: [{ role: 'user', content: '2+3?' }], tools: [] })).toMatchObject({
      usage: { inputTokens: 50, cachedInputTokens: 32 },
      finishReason: 'tool-calls',
    });
  });

  it('OpenAIChatModel: a stream cut before any text is retried; one cut after text is a MODEL_ERROR, not retried', async () => {
    let n = 0;
    handler = () =>
      ++n === 1
        ? { content: 'never shown', cutAfter: 0 }
        : { content: 'whole answer', usage: { prompt: 3, completion: 2 } };
    const m = new OpenAIChatModel({ baseUrl: server.url, model: 'cfg', backoffMs: 5, maxBackoffMs: 20 });
    const deltas: string[] = [];
    expect(
      await m.stream({ messages: [{ role: 'user', content: 'x' }], tools: [] }, (p) => deltas.push(p.delta)),
    ).toMatchObject({ content: 'whole answer' });
    expect(deltas.join('')).toBe('whole answer');
    expect(n).toBe(2);
    n = 0;
    handler = () => (n++, { content: 'half of it', cutAfter: 1 });
    await expect(m.stream({ messages: [{ role: 'user', content: 'x' }], tools: [] }, () => {})).rejects.toMatchObject({
      code: 'MODEL_ERROR',
    });
    expect(n).toBe(1);
  });

  it('a child SIGKILLed mid-stream: resume re-issues the model call, the charge is not repeated, each call that finished is counted once', async () => {
    handler = shopHandler;
    const db = tmp.file('crash.db');
    const ledger = tmp.file('ledger.jsonl');
    const id = 'aisdk-crash-1';
    const start = server.requests.length;
    // the 2nd text delta of the run is the first of turn 1 (turn 0 streams one piece before its tool call)
    const a = await runTs(CHILD, [db, server.url, ledger, id, 'runtime.midStream', '2']);
    expect(a.signal, a.stderr).toBe('SIGKILL');
    const shown = a.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RunEvent);
    const turn1 = shown.filter((e) => e.type === 'step-start' && e.turn === 1)[0] as Extract<
      RunEvent,
      { type: 'step-start' }
    >;
    expect(turn1).toBeDefined();
    expect(shown.at(-1)).toMatchObject({ type: 'text-delta', committed: false, turn: 1, delta: 'Order ' });
    expect(charges(ledger).length).toBe(1);

    const store = new SqliteCheckpointer({ path: db });
    await untilLeaseFree(store, id);
    const before = await store.list(id);
    expect(before.map((r) => `${r.nodeId} ${r.step}`)).toEqual([
      'turn:0 llm_call',
      'turn:0/tool:charge tool_call',
      'turn:1 llm_call',
    ]);
    const events: RunEvent[] = [];
    const r = await crashAgent({ url: server.url, store, ledger }).resume(id, undefined, {
      onEvent: (e) => events.push(e),
    });
    expect(r).toMatchObject({ status: 'completed', output: 'Order A-7 is charged and on its way.' });
    // the app learns the earlier text was not committed: the step starts again at the same checkpoint
    expect(events[0]).toMatchObject({ type: 'step-start', checkpointId: turn1.checkpointId, reentered: true, turn: 1 });
    expect(charges(ledger).length).toBe(1);
    const reqs = server.requests.slice(start);
    expect(reqs.length).toBe(3); // turn 0, turn 1 cut off, turn 1 re-issued
    const rows = await store.list(id);
    expect(rows.map((x) => x.step)).toEqual(['llm_call', 'tool_call', 'llm_call', 'run_end']);
    const total = sumUsage(rows);
    // the cut-off call never finished (no usage was reported); the re-issued call is its own entry
    expect(total).toMatchObject({
      calls: 2,
      inputTokens: 100 + start + 200 + start + 2,
      outputTokens: 30,
      cachedInputTokens: 40,
      models: { 'loop-model': 1, 'loop-model-2026': 1 },
    });
    await store.close();
  });
});
