import type { Model, ModelReply, ModelRequest, ToolCall } from './model.js';

/** What a `ScriptRule` sees: the request, and the turn, last user message and tool results read from it. */
export interface ScriptContext extends ModelRequest {
  /** Number of assistant messages so far: the turn being answered. */
  turn: number;
  /** Content of the last user message. */
  lastUser: string;
  /** The tool results since the last assistant message. */
  toolResults: { name: string; content: string }[];
}

/** What a `ScriptRule` answers: text and/or tool calls. */
export interface ScriptReply {
  content?: string | null;
  /** Tool calls; ids default to `call_<turn>_<i>`. */
  toolCalls?: (Omit<ToolCall, 'id'> & { id?: string })[];
}

/** Decides each reply of a `ScriptedModel` from the conversation so far. */
export type ScriptRule = (ctx: ScriptContext) => ScriptReply;

/**
 * A deterministic offline model for tests and examples: a rule over the
 * conversation decides each reply. Counts its calls.
 */
export class ScriptedModel implements Model {
  readonly name = 'scripted';
  calls = 0;
  constructor(private readonly rule: ScriptRule) {}

  /** The rule's reply to this conversation (no usage); counts the call. */
  async generate(request: ModelRequest): Promise<ModelReply> {
    this.calls++;
    const msgs = request.messages;
    const turn = msgs.filter((m) => m.role === 'assistant').length;
    let lastUser = '';
    for (const m of msgs) if (m.role === 'user') lastUser = m.content;
    const toolResults: { name: string; content: string }[] = [];
    for (let i = msgs.length - 1; i >= 0 && msgs[i].role === 'tool'; i--) {
      const m = msgs[i] as { name: string; content: string };
      toolResults.unshift({ name: m.name, content: m.content });
    }
    // `tools` stays a getter: the agent builds the tools' JSON schemas on first read, and a rule that never looks at them should not pay for it
    const r = this.rule({
      messages: msgs,
      get tools() {
        return request.tools;
      },
      signal: request.signal,
      turn,
      lastUser,
      toolResults,
    });
    return {
      content: r.content ?? null,
      toolCalls: (r.toolCalls ?? []).map((c, i) => ({
        id: c.id ?? `call_${turn}_${i}`,
        name: c.name,
        arguments: c.arguments,
      })),
    };
  }
}
