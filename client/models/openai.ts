/**
 * A `Model` for OpenAI-compatible chat-completions endpoints, over undici.
 * Retries 429 and 5xx (honouring Retry-After) and transport errors with
 * exponential backoff and full jitter; a malformed answer is a MODEL_ERROR,
 * never a guess.
 */
import { backoff, retryAfter } from '../retry.js';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import type {
  FinishReason,
  Message,
  Model,
  ModelReply,
  ModelRequest,
  ModelStreamPart,
  ModelUsage,
  ToolCall,
} from './model.js';

/** Options of `new OpenAIChatModel(...)`: an OpenAI-compatible chat completions endpoint. */
export interface OpenAIChatOptions {
  /** e.g. `https://api.example.com/v1` (the path `/chat/completions` is appended). */
  baseUrl: string;
  /** The model name sent as the request's `model` (and part of the model's `name`, `openai:<model>`). */
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>`; absent: no authorization header. */
  apiKey?: string;
  /** Per attempt, for headers and body. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 4. */
  maxRetries?: number;
  /** The longest wait before the first retry; the bound doubles each retry (full jitter, at least a Retry-After). Default 500 ms. */
  backoffMs?: number;
  /** The cap of that bound: no wait is longer, except to honour a Retry-After. Default 20 s. */
  maxBackoffMs?: number;
  /** The undici dispatcher for the requests (a proxy, a pool, a mock agent in tests); default undici's global one. */
  dispatcher?: Dispatcher;
  /** Extra fields of every request body (temperature, max_tokens…), merged over the ones the model sets. */
  extraBody?: Record<string, Json>;
}

const Usage = z
  .object({
    prompt_tokens: z.number().nonnegative().optional(),
    completion_tokens: z.number().nonnegative().optional(),
    prompt_tokens_details: z.object({ cached_tokens: z.number().nonnegative().nullish() }).nullish(),
  })
  .nullish();

const Reply = z.object({
  model: z.string().optional(),
  usage: Usage,
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().min(1),
                type: z.literal('function').optional(),
                function: z.object({ name: z.string().min(1), arguments: z.string() }),
              }),
            )
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

const Chunk = z.object({
  model: z.string().optional(),
  usage: Usage,
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().nonnegative(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .optional(),
});

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  content_filter: 'content-filter',
};
const finishOf = (raw: string | null | undefined): FinishReason | undefined =>
  raw ? (FINISH[raw] ?? 'other') : undefined;

function usageOf(u: z.infer<typeof Usage>, model: string): ModelUsage | undefined {
  if (!u) return undefined;
  return {
    model,
    inputTokens: u.prompt_tokens ?? null,
    outputTokens: u.completion_tokens ?? null,
    cachedInputTokens: u.prompt_tokens_details?.cached_tokens ?? null,
  };
}

export class ModelError extends WaymarkError {
  constructor(
    message: string,
    readonly status?: number,
    cause?: unknown,
  ) {
    super(ErrorCode.MODEL_ERROR, message, { cause, details: status ? { status } : undefined });
    this.name = 'ModelError';
  }
}

function toWire(m: Message): Record<string, unknown> {
  switch (m.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls?.length
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    default:
      return { role: m.role, content: m.content };
  }
}

/** A `Model` over an OpenAI-compatible `/chat/completions` endpoint, with timeouts and retries of 429, 5xx and connection failures. */
export class OpenAIChatModel implements Model {
  readonly name: string;
  constructor(private readonly o: OpenAIChatOptions) {
    this.name = `openai:${o.model}`;
  }

  /** One chat completion: the reply's text, tool calls, usage and finish reason. */
  generate(req: ModelRequest): Promise<ModelReply> {
    return this.call(req, null);
  }

  /** The same call with `stream: true`: text deltas as they come, the reply (and usage) at the end. */
  stream(req: ModelRequest, onPart: (part: ModelStreamPart) => void): Promise<ModelReply> {
    return this.call(req, onPart);
  }

  private async call(req: ModelRequest, onPart: ((part: ModelStreamPart) => void) | null): Promise<ModelReply> {
    const url = `${this.o.baseUrl.replace(/\/$/, '')}/chat/completions`;
    const body = JSON.stringify({
      model: this.o.model,
      messages: req.messages.map(toWire),
      ...(req.tools.length
        ? {
            tools: req.tools.map((t) => ({
              type: 'function',
              function: { name: t.name, description: t.description, parameters: t.parameters },
            })),
          }
        : {}),
      ...this.o.extraBody,
      ...(onPart ? { stream: true, stream_options: { include_usage: true } } : {}),
    });
    const timeout = this.o.timeoutMs ?? 60_000;
    const retries = this.o.maxRetries ?? 4;
    const base = this.o.backoffMs ?? 500;
    const cap = this.o.maxBackoffMs ?? 20_000;
    let lastError: unknown;
    // loaded on the first request, not with the root entry: undici's import is ~150 ms of CPU that a process never calling a model need not pay
    const { request } = await import('undici');
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        const floor = (lastError as { retryAfter?: number })?.retryAfter ?? 0;
        await backoff(attempt, { baseMs: base, capMs: cap }, floor, req.signal);
      }
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}),
          },
          body,
          headersTimeout: timeout,
          bodyTimeout: timeout,
          dispatcher: this.o.dispatcher,
          signal: req.signal,
        });
      } catch (e) {
        if (req.signal?.aborted) throw e;
        lastError = new ModelError(`model request failed: ${(e as Error).message}`, undefined, e);
        continue;
      }
      if (onPart && res.statusCode < 300) {
        const shown = { any: false };
        try {
          return await readStream(res.body, this.o.model, onPart, shown);
        } catch (e) {
          if (req.signal?.aborted || e instanceof ModelError || shown.any) {
            throw e instanceof ModelError
              ? e
              : new ModelError(`model stream failed: ${(e as Error).message}`, res.statusCode, e);
          }
          // nothing was shown yet: a transport failure is retried like any other
          lastError = new ModelError(`model stream failed: ${(e as Error).message}`, res.statusCode, e);
          continue;
        }
      }
      let text: string;
      try {
        text = await res.body.text();
      } catch (e) {
        lastError = new ModelError(`model response body failed: ${(e as Error).message}`, res.statusCode, e);
        continue;
      }
      if (res.statusCode === 429 || res.statusCode >= 500) {
        const err = new ModelError(`model endpoint answered ${res.statusCode}`, res.statusCode);
        (err as unknown as { retryAfter?: number }).retryAfter = retryAfter(res.headers['retry-after']) ?? 0;
        lastError = err;
        continue;
      }
      if (res.statusCode >= 400) {
        throw new ModelError(`model endpoint answered ${res.statusCode}: ${text.slice(0, 300)}`, res.statusCode);
      }
      return parseReply(text, this.o.model);
    }
    throw lastError;
  }
}

/**
 * Read a chat-completions event stream: content deltas go to `onPart` as they
 * arrive, tool-call pieces are joined by index, the usage chunk is kept.
 */
async function readStream(
  body: AsyncIterable<Buffer | string>,
  configured: string,
  onPart: (part: ModelStreamPart) => void,
  shown: { any: boolean },
): Promise<ModelReply> {
  let content: string | null = null;
  const calls: { id: string; name: string; args: string }[] = [];
  let finish: string | null | undefined;
  let usage: z.infer<typeof Usage> = null;
  let model = configured;
  let done = false;
  let buf = '';
  const decoder = new TextDecoder();
  const line = (raw: string) => {
    const l = raw.replace(/\r$/, '');
    if (!l.startsWith('data:')) return;
    const data = l.slice(5).trim();
    if (data === '[DONE]') {
      done = true;
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch (e) {
      throw new ModelError(`model stream chunk is not JSON: ${data.slice(0, 120)}`, 200, e);
    }
    const c = Chunk.safeParse(json);
    if (!c.success)
      throw new ModelError(
        `model stream chunk is malformed: ${c.error.issues[0].path.join('.')}: ${c.error.issues[0].message}`,
        200,
      );
    if (c.data.model) model = c.data.model;
    if (c.data.usage) usage = c.data.usage;
    const choice = c.data.choices?.[0];
    if (!choice) return;
    if (choice.finish_reason) finish = choice.finish_reason;
    const d = choice.delta;
    if (d?.content) {
      content = (content ?? '') + d.content;
      shown.any = true;
      onPart({ type: 'text-delta', delta: d.content });
    }
    for (const t of d?.tool_calls ?? []) {
      const slot = (calls[t.index] ??= { id: '', name: '', args: '' });
      if (t.id) slot.id = t.id;
      if (t.function?.name) slot.name += t.function.name;
      if (t.function?.arguments) slot.args += t.function.arguments;
    }
  };
  for await (const piece of body) {
    buf += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      line(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  }
  if (buf) line(buf);
  if (!done && finish === undefined) throw new ModelError('model stream ended before it finished', 200);
  const toolCalls: ToolCall[] = calls.filter(Boolean).map((c) => {
    if (!c.id || !c.name) throw new ModelError('model stream sent a tool call without id or name', 200);
    let args: Json;
    try {
      args = c.args.trim() === '' ? {} : (JSON.parse(c.args) as Json);
    } catch (e) {
      throw new ModelError(`model sent malformed arguments for tool '${c.name}': ${c.args.slice(0, 120)}`, 200, e);
    }
    return { id: c.id, name: c.name, arguments: args };
  });
  const reply: ModelReply = { content, toolCalls };
  const f = finishOf(finish);
  if (f) reply.finishReason = f;
  const u = usageOf(usage, model);
  if (u) reply.usage = u;
  return reply;
}

/** Map a chat-completions answer to a ModelReply; anything malformed is a ModelError. */
export function parseReply(text: string, configured = 'unknown'): ModelReply {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ModelError(`model answer is not JSON: ${text.slice(0, 120)}`, 200, e);
  }
  const r = Reply.safeParse(json);
  if (!r.success)
    throw new ModelError(
      `model answer is malformed: ${r.error.issues[0].path.join('.')}: ${r.error.issues[0].message}`,
      200,
    );
  const msg = r.data.choices[0].message;
  const toolCalls = (msg.tool_calls ?? []).map((c) => {
    let args: Json;
    try {
      args = c.function.arguments.trim() === '' ? {} : (JSON.parse(c.function.arguments) as Json);
    } catch (e) {
      throw new ModelError(
        `model sent malformed arguments for tool '${c.function.name}': ${c.function.arguments.slice(0, 120)}`,
        200,
        e,
      );
    }
    return { id: c.id, name: c.function.name, arguments: args };
  });
  const reply: ModelReply = { content: msg.content ?? null, toolCalls };
  const f = finishOf(r.data.choices[0].finish_reason);
  if (f) reply.finishReason = f;
  const u = usageOf(r.data.usage, r.data.model ?? configured);
  if (u) reply.usage = u;
  return reply;
}
