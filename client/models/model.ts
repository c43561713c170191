/**
 * The model contract: messages and tool specs in, content and tool calls out.
 * Messages are plain JSON so they can be checkpointed as they are.
 */
import type { Json } from '../../shared/json.js';

export interface ToolCall {
  id: string;
  name: string;
  arguments: Json;
}

export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Json;
}

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

export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
  /** Set when the provider reported usage; recorded with the run's next row (see loop.ts). */
  usage?: ModelUsage;
  finishReason?: FinishReason;
}

/** What a streaming model reports while its answer comes in. Provisional until the run's next row. */
export type ModelStreamPart = { type: 'text-delta'; delta: string };

export interface Model {
  readonly name: string;
  generate(request: ModelRequest): Promise<ModelReply>;
  /**
   * Optional: the same call, streamed. `onPart` sees text as it arrives; the
   * promise resolves with the whole reply, exactly what `generate` would have
   * returned. The agent uses it when a run has an `onEvent` listener.
   */
  stream?(request: ModelRequest, onPart: (part: ModelStreamPart) => void): Promise<ModelReply>;
}
