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

export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
}

export interface Model {
  readonly name: string;
  generate(request: ModelRequest): Promise<ModelReply>;
}
