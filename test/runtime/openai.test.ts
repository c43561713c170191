import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { Agent, OpenAIChatModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

type Handler = (body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void;

describe('OpenAI-compatible chat-completions adapter (real HTTP on 127.0.0.1)', () => {
  let server: Server;
  let url: string;
  let queue: Handler[] = [];
  let seen: Record<string, unknown>[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let data = '';
      req.on('data', (d) => (data += d));
      req.on('end', () => {
        const body = JSON.parse(data) as Record<string, unknown>;
        seen.push({ ...body, auth: req.headers.authorization, path: req.url });
        const h = queue.shift();
        if (!h) {
          res.writeHead(500).end('no handler');
          return;
        }
        h(body, req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    queue = [];
    seen = [];
  });
  const json =
    (obj: unknown, status = 200, headers: Record<string, string> = {}): Handler =>
    (_b, _q, res) => {
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(typeof obj === 'string' ? obj : JSON.stringify(obj));
    };
  const answer = (message: Record<string, unknown>) => json({ choices: [{ message }] });
  const fast = (o: Partial<ConstructorParameters<typeof OpenAIChatModel>[0]> = {}) =>
    new OpenAIChatModel({ baseUrl: url, model: 'm', apiKey: 'sk-test', backoffMs: 5, maxBackoffMs: 20, ...o });

  it('maps tools and tool calls both ways through a real agent run', async () => {
    queue.push(
      answer({
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      }),
      answer({ content: 'the sum is 5' }),
    );
    const add = tool({
      name: 'add',
      description: 'add numbers',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    });
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const r = await new Agent({ name: 'calc', model: fast(), tools: [add], checkpointer: store }).run('2+3?');
    expect(r).toMatchObject({ status: 'completed', output: 'the sum is 5' });
    expect(seen[0]).toMatchObject({ model: 'm', auth: 'Bearer sk-test', path: '/v1/chat/completions' });
    expect(
      (seen[0].tools as { function: { name: string; parameters: { properties: object } } }[])[0].function,
    ).toMatchObject({ name: 'add', parameters: { properties: { a: {}, b: {} } } });
    expect(seen[1].messages).toEqual([
      { role: 'user', content: '2+3?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '5' },
    ]);
    await store.close();
  });

  it('retries 429 after Retry-After and 5xx with backoff, then succeeds', async () => {
    queue.push(
      json({ error: 'slow down' }, 429, { 'retry-after': '0.05' }),
      json('oops', 503),
      json('oops', 500),
      answer({ content: 'ok' }),
    );
    const t0 = Date.now();
    const r = await fast().generate({ messages: [{ role: 'user', content: 'hi' }], tools: [] });
    expect(r).toEqual({ content: 'ok', toolCalls: [] });
    expect(seen.length).toBe(4);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(50);
  });

  it('gives up after maxRetries with MODEL_ERROR; a 4xx is not retried', async () => {
    queue.push(json('x', 500), json('x', 500), json('x', 500));
    await expect(fast({ maxRetries: 2 }).generate({ messages: [], tools: [] })).rejects.toMatchObject({
      code: 'MODEL_ERROR',
      details: { status: 500 },
    });
    queue.push(json({ error: 'bad key' }, 401));
    await expect(fast().generate({ messages: [], tools: [] })).rejects.toMatchObject({
      code: 'MODEL_ERROR',
      details: { status: 401 },
    });
    expect(seen.length).toBe(4);
  });

  it('malformed answers are MODEL_ERRORs: not JSON, wrong shape, bad tool arguments', async () => {
    queue.push(json('{"choices": [', 200));
    await expect(fast().generate({ messages: [], tools: [] })).rejects.toThrow(/not JSON/);
    queue.push(json({ choices: [] }));
    await expect(fast().generate({ messages: [], tools: [] })).rejects.toThrow(/malformed/);
    queue.push(answer({ content: null, tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{oops' } }] }));
    await expect(fast().generate({ messages: [], tools: [] })).rejects.toThrow(/malformed arguments for tool 'f'/);
  });

  it('a hung endpoint times out and is retried', async () => {
    queue.push(
      () => {
        /* never answers */
      },
      answer({ content: 'late but fine' }),
    );
    const r = await fast({ timeoutMs: 150 }).generate({ messages: [], tools: [] });
    expect(r.content).toBe('late but fine');
  });
});
