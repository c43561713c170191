/**
 * A tiny OpenAI-compatible chat-completions server on 127.0.0.1 (port 0) for
 * tests: real HTTP, JSON answers or server-sent events when the request asks
 * to stream (`stream: true`, with a usage chunk when `stream_options.include_usage`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  content?: string | null;
  toolCalls?: { id: string; name: string; arguments: string }[];
  usage?: { prompt: number; completion: number; cached?: number };
  model?: string;
  finishReason?: string;
  /** Answer with this status and body instead. */
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Pieces the content is streamed in (default: one per word). */
  pieces?: string[];
  /** Stream only this many content pieces, then drop the connection (no finish, no [DONE]). */
  cutAfter?: number;
}

export type FakeHandler = (body: Record<string, unknown>, index: number) => FakeReply;

export interface FakeOpenAI {
  url: string;
  /** Request bodies in arrival order. */
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function startFakeOpenAI(handler: FakeHandler): Promise<FakeOpenAI> {
  const requests: Record<string, unknown>[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let data = '';
    req.on('data', (d) => (data += d));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(data) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end('not JSON');
        return;
      }
      const index = requests.push(body) - 1;
      let r: FakeReply;
      try {
        r = handler(body, index);
      } catch (e) {
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: (e as Error).message } }));
        return;
      }
      if (r.status && r.status !== 200) {
        res
          .writeHead(r.status, { 'content-type': 'application/json', ...r.headers })
          .end(r.body ?? JSON.stringify({ error: { message: `status ${r.status}` } }));
        return;
      }
      const model = r.model ?? String(body.model);
      const finish = r.finishReason ?? (r.toolCalls?.length ? 'tool_calls' : 'stop');
      const usage = r.usage
        ? {
            prompt_tokens: r.usage.prompt,
            completion_tokens: r.usage.completion,
            total_tokens: r.usage.prompt + r.usage.completion,
            prompt_tokens_details: { cached_tokens: r.usage.cached ?? 0 },
          }
        : undefined;
      const toolCalls = r.toolCalls?.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      }));
      const created = Math.floor(Date.now() / 1000);
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `chatcmpl-${index}`,
            object: 'chat.completion',
            created,
            model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: r.content ?? null,
                  ...(toolCalls ? { tool_calls: toolCalls } : {}),
                },
                finish_reason: finish,
              },
            ],
            ...(usage ? { usage } : {}),
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (
        delta: Record<string, unknown>,
        finishReason: string | null = null,
        extra: Record<string, unknown> = {},
      ) =>
        res.write(
          `data: ${JSON.stringify({ id: `chatcmpl-${index}`, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
        );
      chunk({ role: 'assistant', content: '' });
      const pieces = r.pieces ?? (r.content ? r.content.split(/(?<= )/) : []);
      for (const [i, p] of pieces.entries()) {
        if (r.cutAfter !== undefined && i >= r.cutAfter) {
          // drop the connection once what was written has left this process
          res.write('', () => res.socket?.destroy());
          return;
        }
        chunk({ content: p });
      }
      (toolCalls ?? []).forEach((c, i) => {
        chunk({
          tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }],
        });
        const a = c.function.arguments;
        const half = Math.floor(a.length / 2);
        for (const part of [a.slice(0, half), a.slice(half)])
          if (part) chunk({ tool_calls: [{ index: i, function: { arguments: part } }] });
      });
      chunk({}, finish);
      const so = body.stream_options as { include_usage?: boolean } | undefined;
      if (usage && so?.include_usage) {
        res.write(
          `data: ${JSON.stringify({ id: `chatcmpl-${index}`, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
        );
      }
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
