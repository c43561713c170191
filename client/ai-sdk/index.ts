/**
 * `waymark/ai-sdk`: any AI SDK language model (the LanguageModelV3 provider
 * spec of `@ai-sdk/provider@3`, which `@ai-sdk/openai`, `@ai-sdk/anthropic`,
 * `@ai-sdk/openai-compatible`… 2.x/3.x implement) as a waymark `Model`.
 *
 * Only types are imported from `@ai-sdk/provider`: this module has no runtime
 * dependency on the AI SDK, and the root entry never imports it.
 *
 * Mapping:
 *  - messages: system → system; user → one text part; assistant → a text part
 *    and `tool-call` parts (input as the saved JSON); consecutive tool messages
 *    → one `tool` message of `tool-result` parts (output `{type:'text'}`).
 *  - tools: `{ type: 'function', name, description, inputSchema }` with the
 *    JSON Schema waymark builds from the tool's zod schema; toolChoice auto.
 *  - reply: text parts joined; `tool-call` parts with their input parsed as
 *    JSON (malformed input is a MODEL_ERROR); reasoning is not kept; tool calls
 *    the provider executed itself are not run again (they are dropped); an
 *    empty or repeated tool call id becomes `call_<index>`, so every call of a
 *    reply has its own id (a resume finds the cut-off call by it).
 *  - finish reason: the unified reason is kept on the reply and recorded with
 *    the usage; `error` is a MODEL_ERROR.
 *  - usage: inputTokens.total, outputTokens.total, inputTokens.cacheRead and the
 *    model id of the answer (response-metadata) or of the model.
 *  - errors: an `APICallError` with `isRetryable` (429, 5xx, connection
 *    failures) is retried with exponential backoff and full jitter, at least
 *    its Retry-After; any other error, or the last retry's, is a MODEL_ERROR
 *    carrying the status. A stream that failed after it had shown text is not
 *    retried here (the agent's re-issue on resume is the retry).
 *
 * @module waymark/ai-sdk
 */
import { backoff, retryAfter } from '../retry.js';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { Json } from '../../shared/json.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import {
  distinctCallIds,
  type FinishReason,
  type Message,
  type Model,
  type ModelReply,
  type ModelRequest,
  type ModelStreamPart,
  type ModelUsage,
  type ToolCall,
} from '../models/model.js';
import { ModelError } from '../models/openai.js';

/** Options of `fromAISDK`: retries of retryable provider errors, and call options passed through. */
export interface AISDKModelOptions {
  /** Retries after the first attempt, for retryable errors. Default 4. */
  maxRetries?: number;
  /** The longest wait before the first retry; the bound doubles each retry (full jitter, at least a Retry-After). Default 500 ms. */
  backoffMs?: number;
  /** The cap of that bound: no wait is longer, except to honour a Retry-After. Default 20 s. */
  maxBackoffMs?: number;
  /** Passed to every call as they are (temperature, maxOutputTokens, providerOptions…). */
  callOptions?: Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'toolChoice' | 'abortSignal'>;
}

/** Wrap an AI SDK LanguageModelV3 as a waymark Model. */
export function fromAISDK(model: LanguageModelV3, options: AISDKModelOptions = {}): AISDKModel {
  return new AISDKModel(model, options);
}

/** An AI SDK LanguageModelV3 as a waymark `Model` (see the module's mapping above); `fromAISDK` makes one. */
export class AISDKModel implements Model {
  readonly name: string;
  constructor(
    readonly model: LanguageModelV3,
    private readonly o: AISDKModelOptions = {},
  ) {
    const version = (model as { specificationVersion?: unknown } | null)?.specificationVersion;
    if (version !== 'v3') {
      throw new WaymarkError(
        ErrorCode.UNSUPPORTED_MODEL,
        `waymark/ai-sdk supports LanguageModelV3 (@ai-sdk/provider 3.x); this model has specificationVersion '${String(version)}'`,
        {
          details: { specificationVersion: String(version) },
        },
      );
    }
    this.name = `${model.provider}:${model.modelId}`;
  }

  private callOptions(req: ModelRequest): LanguageModelV3CallOptions {
    const tools = req.tools;
    return {
      ...this.o.callOptions,
      prompt: toPrompt(req.messages),
      ...(tools.length
        ? {
            tools: tools.map((t) => ({
              type: 'function' as const,
              name: t.name,
              description: t.description,
              inputSchema: t.parameters as object,
            })),
            toolChoice: { type: 'auto' as const },
          }
        : {}),
      abortSignal: req.signal,
    };
  }

  /** One `doGenerate` call, retried on retryable errors, mapped to a waymark reply. */
  async generate(req: ModelRequest): Promise<ModelReply> {
    const opts = this.callOptions(req);
    return this.retrying(req.signal, async () => {
      const r = await this.model.doGenerate(opts);
      return fromContent(r.content, r.finishReason, r.usage, r.response?.modelId ?? this.model.modelId);
    });
  }

  async stream(req: ModelRequest, onPart: (part: ModelStreamPart) => void): Promise<ModelReply> {
    const opts = this.callOptions(req);
    let shown = false;
    return this.retrying(req.signal, async () => {
      const { stream } = await this.model.doStream(opts);
      const content: LanguageModelV3Content[] = [];
      let text = '';
      let finish: LanguageModelV3FinishReason | undefined;
      let usage: LanguageModelV3Usage | undefined;
      let modelId = this.model.modelId;
      const reader = stream.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const part = value as LanguageModelV3StreamPart;
          switch (part.type) {
            case 'text-delta':
              text += part.delta;
              shown = true;
              onPart({ type: 'text-delta', delta: part.delta });
              break;
            case 'tool-call':
              content.push(part);
              break;
            case 'response-metadata':
              if (part.modelId) modelId = part.modelId;
              break;
            case 'finish':
              finish = part.finishReason;
              usage = part.usage;
              break;
            case 'error':
              throw part.error;
            default:
              break;
          }
        }
      } catch (e) {
        await reader.cancel().catch(() => {});
        if (shown) throw noRetry(e);
        throw e;
      }
      if (!finish) throw new ModelError('the model stream ended without a finish part');
      if (text) content.unshift({ type: 'text', text });
      return fromContent(content, finish, usage, modelId);
    });
  }

  private async retrying(signal: AbortSignal | undefined, attempt: () => Promise<ModelReply>): Promise<ModelReply> {
    const retries = this.o.maxRetries ?? 4;
    const base = this.o.backoffMs ?? 500;
    const cap = this.o.maxBackoffMs ?? 20_000;
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (e) {
        if (signal?.aborted) throw e;
        if (e instanceof ModelError) throw e;
        const err = toModelError(e);
        if (!isRetryable(e) || n >= retries) throw err;
        const floor = retryAfter(headerOf(e, 'retry-after')) ?? 0;
        await backoff(n + 1, { baseMs: base, capMs: cap }, floor, signal);
      }
    }
  }
}

class NoRetry extends Error {
  constructor(readonly inner: unknown) {
    super('stream failed after text was shown');
  }
}
const noRetry = (e: unknown) => (e instanceof ModelError ? e : new NoRetry(e));

function isRetryable(e: unknown): boolean {
  if (e instanceof NoRetry) return false;
  return (e as { isRetryable?: unknown })?.isRetryable === true;
}

function headerOf(e: unknown, name: string): string | undefined {
  const h = (e as { responseHeaders?: Record<string, string> })?.responseHeaders;
  if (!h) return undefined;
  for (const [k, v] of Object.entries(h)) if (k.toLowerCase() === name) return v;
  return undefined;
}

function toModelError(e: unknown): ModelError {
  const inner = e instanceof NoRetry ? e.inner : e;
  const status = (inner as { statusCode?: unknown })?.statusCode;
  const message = (inner as Error)?.message ?? String(inner);
  return new ModelError(
    `model call failed${typeof status === 'number' ? ` (${status})` : ''}: ${message.slice(0, 300)}`,
    typeof status === 'number' ? status : undefined,
    inner,
  );
}

/** waymark messages → an AI SDK prompt. */
export function toPrompt(messages: readonly Message[]): LanguageModelV3Prompt {
  const out: LanguageModelV3Message[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        out.push({ role: 'system', content: m.content });
        break;
      case 'user':
        out.push({ role: 'user', content: [{ type: 'text', text: m.content }] });
        break;
      case 'assistant':
        out.push({
          role: 'assistant',
          content: [
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            ...(m.toolCalls ?? []).map((c) => ({
              type: 'tool-call' as const,
              toolCallId: c.id,
              toolName: c.name,
              input: c.arguments,
            })),
          ],
        });
        break;
      case 'tool': {
        const part = {
          type: 'tool-result' as const,
          toolCallId: m.toolCallId,
          toolName: m.name,
          output: { type: 'text' as const, value: m.content },
        };
        const last = out[out.length - 1];
        if (last?.role === 'tool') last.content.push(part);
        else out.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return out;
}

const FINISH: ReadonlySet<string> = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other']);

function fromContent(
  content: readonly LanguageModelV3Content[],
  finish: LanguageModelV3FinishReason | undefined,
  usage: LanguageModelV3Usage | undefined,
  modelId: string,
): ModelReply {
  const unified = finish?.unified;
  if (unified === 'error') {
    throw new ModelError(`the model finished with an error${finish?.raw ? ` (${finish.raw})` : ''}`);
  }
  let text: string | null = null;
  const toolCalls: ToolCall[] = [];
  for (const part of content) {
    if (part.type === 'text') text = (text ?? '') + part.text;
    else if (part.type === 'tool-call') {
      if (part.providerExecuted) continue;
      let args: Json;
      try {
        args = part.input.trim() === '' ? {} : (JSON.parse(part.input) as Json);
      } catch (e) {
        throw new ModelError(
          `model sent malformed arguments for tool '${part.toolName}': ${part.input.slice(0, 120)}`,
          undefined,
          e,
        );
      }
      toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: args });
    }
  }
  const reply: ModelReply = { content: text, toolCalls: [...distinctCallIds(toolCalls)] };
  if (unified && FINISH.has(unified)) reply.finishReason = unified as FinishReason;
  if (usage) reply.usage = toUsage(usage, modelId);
  return reply;
}

function toUsage(u: LanguageModelV3Usage, model: string): ModelUsage {
  const n = (v: number | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    model,
    inputTokens: n(u.inputTokens?.total),
    outputTokens: n(u.outputTokens?.total),
    cachedInputTokens: n(u.inputTokens?.cacheRead),
  };
}
