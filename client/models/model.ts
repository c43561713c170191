/**
 * The model contract: messages and tool specs in, content and tool calls out.
 * Messages are plain JSON so they can be checkpointed as they are.
 */
import type { Json } from '../../shared/json.js';

/** One tool call of a model's reply: its id, the tool's name and the arguments (JSON). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: Json;
}

/** One message of a conversation, as plain JSON (checkpointed as it is). */
export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** A tool as a model request describes it: name, description and the JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Json;
}

/** What a model is asked: the conversation, the tools it may call, and an abort signal. */
export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  signal?: AbortSignal;
}

/** Why the model stopped, in the AI SDK's unified vocabulary. */
export type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other';

/**
 * Tokens the provider reported for one call (null: not reported). `model` is
 * the model that answered (the provider's id when it says, else the configured one).
 */
export interface ModelUsage {
  model: string;
  inputTokens: number | null;
  outputTokens: number | null;
  /** Input tokens read from the provider's prompt cache (part of inputTokens). */
  cachedInputTokens: number | null;
}

/**
 * A reply's tool calls, each with its own non-empty id. Some providers send
 * `''`, or one id for several calls; the agent finds the call a tool row
 * names by its id, so a shared id would make a resume after a crash re-run
 * the first call in place of the one that was cut off. A distinct id is kept;
 * an empty or repeated one becomes `call_<index>` (with a suffix if that is
 * taken). The ids are stored with the reply, so the model is shown the same
 * ids on every later call. Returns `calls` itself when every id is distinct.
 */
export function distinctCallIds(calls: readonly ToolCall[]): readonly ToolCall[] {
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
  const own = (c: ToolCall) => c.id !== '' && counts.get(c.id) === 1;
  if (calls.every(own)) return calls;
  const taken = new Set(calls.filter(own).map((c) => c.id));
  return calls.map((c, i) => {
    if (own(c)) return c;
    let id = `call_${i}`;
    for (let n = 1; taken.has(id); n++) id = `call_${i}_${n}`;
    taken.add(id);
    return { ...c, id };
  });
}

/** A model's answer: text and/or tool calls, with usage and the finish reason when the provider reports them. */
export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
  /** Set when the provider reported usage; recorded with the run's next row (see loop.ts). */
  usage?: ModelUsage;
  finishReason?: FinishReason;
}

/** What a streaming model reports while its answer comes in. Provisional until the run's next row. */
export type ModelStreamPart = { type: 'text-delta'; delta: string };

/** A chat model with tool calls: `OpenAIChatModel`, `fromAISDK(...)`, `ScriptedModel`, or any implementation. */
export interface Model {
  readonly name: string;
  /** Answer one request: the reply's text, tool calls, usage and finish reason. */
  generate(request: ModelRequest): Promise<ModelReply>;
  /**
   * Optional: the same call, streamed. `onPart` sees text as it arrives; the
   * promise resolves with the whole reply, exactly what `generate` would have
   * returned. The agent uses it when a run has an `onEvent` listener.
   */
  stream?(request: ModelRequest, onPart: (part: ModelStreamPart) => void): Promise<ModelReply>;
}
