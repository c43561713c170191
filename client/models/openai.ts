/**
 * A `Model` for OpenAI-compatible chat-completions endpoints, over undici.
 * Retries 429 and 5xx (honouring Retry-After) and transport errors with
 * exponential backoff and full jitter; a malformed answer is a MODEL_ERROR,
 * never a guess.
 */
import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import type { Message, Model, ModelReply, ModelRequest } from './model.js';
import { retryAfter } from '../replica/http.js';

export interface OpenAIChatOptions {
  /** e.g. `https://api.example.com/v1` (the path `/chat/completions` is appended). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per attempt, for headers and body. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 4. */
  maxRetries?: number;
  /** Backoff base and cap. Default 500 ms, 20 s. */
  backoffMs?: number;
  maxBackoffMs?: number;
  dispatcher?: Dispatcher;
  extraBody?: Record<string, Json>;
}

const Reply = z.object({
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
      }),
    )
    .min(1),
});

export class ModelError extends WaymarkError {
  constructor(message: string, readonly status?: number, cause?: unknown) {
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

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });

export class OpenAIChatModel implements Model {
  readonly name: string;
  constructor(private readonly o: OpenAIChatOptions) {
    this.name = `openai:${o.model}`;
  }

  async generate(req: ModelRequest): Promise<ModelReply> {
    const url = `${this.o.baseUrl.replace(/\/$/, '')}/chat/completions`;
    const body = JSON.stringify({
      model: this.o.model,
      messages: req.messages.map(toWire),
      ...(req.tools.length
        ? { tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
        : {}),
      ...this.o.extraBody,
    });
    const timeout = this.o.timeoutMs ?? 60_000;
    const retries = this.o.maxRetries ?? 4;
    const base = this.o.backoffMs ?? 500;
    const cap = this.o.maxBackoffMs ?? 20_000;
    let lastError: unknown;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        const floor = (lastError as { retryAfter?: number })?.retryAfter ?? 0;
        await sleep(Math.max(floor, Math.random() * Math.min(cap, base * 2 ** attempt)), req.signal);
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
      return parseReply(text);
    }
    throw lastError;
  }
}

/** Map a chat-completions answer to a ModelReply; anything malformed is a ModelError. */
export function parseReply(text: string): ModelReply {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ModelError(`model answer is not JSON: ${text.slice(0, 120)}`, 200, e);
  }
  const r = Reply.safeParse(json);
  if (!r.success) throw new ModelError(`model answer is malformed: ${r.error.issues[0].path.join('.')}: ${r.error.issues[0].message}`, 200);
  const msg = r.data.choices[0].message;
  const toolCalls = (msg.tool_calls ?? []).map((c) => {
    let args: Json;
    try {
      args = c.function.arguments.trim() === '' ? {} : (JSON.parse(c.function.arguments) as Json);
    } catch (e) {
      throw new ModelError(`model sent malformed arguments for tool '${c.function.name}': ${c.function.arguments.slice(0, 120)}`, 200, e);
    }
    return { id: c.id, name: c.function.name, arguments: args };
  });
  return { content: msg.content ?? null, toolCalls };
}
