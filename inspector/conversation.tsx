/** @jsxImportSource hono/jsx */
/** A run's messages shown as a conversation (the run page's state). */
import type { FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import { json, prettyText } from './layout.js';

type Obj = { [k: string]: Json };
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One message as the page shows it, whatever shape it was stored in. */
export interface MessageView {
  /** user, assistant, tool, system (or the message's own word for one that is none of them); `message` when it names none */
  role: string;
  /** its content: text, or a part that is not text (an image, a reasoning block) as JSON */
  parts: ({ text: string } | { json: Json })[];
  toolCalls: { name: string; arguments: Json }[];
  /** a tool result's tool */
  name: string | null;
}

/** The roles of the shapes messages come in (waymark's and OpenAI's `role`, LangChain's `type` and class names). */
const ROLES: Record<string, string> = {
  user: 'user',
  human: 'user',
  assistant: 'assistant',
  ai: 'assistant',
  tool: 'tool',
  system: 'system',
  developer: 'system',
};

function partsOf(content: Json | undefined): MessageView['parts'] {
  if (content === undefined || content === null || content === '') return [];
  if (typeof content === 'string') return [{ text: content }];
  if (!Array.isArray(content)) return [{ json: content }];
  return content.flatMap((p): MessageView['parts'] => {
    if (typeof p === 'string') return p === '' ? [] : [{ text: p }];
    if (isObj(p) && p.type === 'text' && typeof p.text === 'string') return p.text === '' ? [] : [{ text: p.text }];
    return [{ json: p }];
  });
}

function toolCallsOf(m: Obj): MessageView['toolCalls'] {
  const calls = Array.isArray(m.toolCalls) ? m.toolCalls : Array.isArray(m.tool_calls) ? m.tool_calls : [];
  return calls.filter(isObj).map((c) => {
    const fn = isObj(c.function) ? c.function : c;
    return {
      name: typeof fn.name === 'string' ? fn.name : '?',
      arguments: fn.arguments ?? fn.args ?? c.args ?? null,
    };
  });
}

/**
 * A stored message as role, text and tool calls. Shapes read: waymark's own
 * (`{ role, content, toolCalls }`), OpenAI's (`tool_calls` with `function`),
 * LangChain's serialized class (`{ lc: 1, type: 'constructor', id: [...,
 * 'HumanMessage'], kwargs: { content, tool_calls } }`), its stored dict
 * (`{ type: 'human', data: { content } }`) and a plain `{ type, content }`.
 * Content is a string or an array of parts (text parts shown as text).
 */
export function messageView(raw: Json): MessageView {
  let m: Obj = isObj(raw) ? raw : {};
  let kind: string | null = null;
  if (m.lc === 1 && m.type === 'constructor' && Array.isArray(m.id) && isObj(m.kwargs)) {
    // HumanMessage, AIMessageChunk, ToolMessage, ChatMessage (its kwargs name the role)…
    kind = String(m.id.at(-1) ?? '')
      .replace(/(MessageChunk|Message)$/, '')
      .toLowerCase();
    m = m.kwargs;
  } else if (typeof m.type === 'string' && isObj(m.data) && m.role === undefined) {
    kind = m.type;
    m = m.data;
  }
  const named = typeof m.role === 'string' ? m.role : typeof m.type === 'string' ? m.type : null;
  const word = kind === null || kind === 'chat' || kind === 'generic' ? (named ?? kind) : kind;
  const role = word ? (ROLES[word.toLowerCase()] ?? word) : 'message';
  return {
    role,
    parts: partsOf(m.content),
    toolCalls: toolCallsOf(m),
    name: typeof m.name === 'string' ? m.name : null,
  };
}

/** `text` cut to `max` characters (null: whole), saying what was cut. */
const cut = (text: string, max: number | null) =>
  max === null || text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;

/**
 * A run's messages as a conversation: who said what, tool calls with their arguments, tool results. Raw JSON one
 * click away. `from`: the index of the first in the whole conversation (its anchor is `#msg-N`); `clip`: texts
 * longer than this many characters are cut (a tail on the run page stays small whatever a tool returned);
 * `anchors` false: no `#msg-N` ids (a second conversation on a page, the state diff's, would repeat the tail's);
 * `raw` false: no raw JSON (the diff's: the state's own page has it).
 */
export const Conversation: FC<{ messages: Json[]; from?: number; clip?: number; anchors?: boolean; raw?: boolean }> = ({
  messages,
  from = 0,
  clip = null,
  anchors = true,
  raw: showRaw = true,
}) => (
  <ol class="conversation">
    {messages.map((raw, i) => {
      const m = messageView(raw);
      return (
        <li class={`msg msg-${m.role.replace(/[^a-z]/g, '')}`} id={anchors ? `msg-${from + i}` : undefined}>
          <div class="msg-role">
            {m.role === 'tool' ? (
              <>
                tool result <span class="mono">{m.name ?? ''}</span>
              </>
            ) : (
              m.role
            )}
          </div>
          {m.parts.map((p) =>
            'text' in p ? (
              <pre class="msg-text">{cut(m.role === 'tool' ? prettyText(p.text) : p.text, clip)}</pre>
            ) : (
              <pre class="msg-text">{cut(json(p.json), clip)}</pre>
            ),
          )}
          {m.toolCalls.map((c) => (
            <div class="tool-call">
              calls <strong class="mono">{c.name}</strong>
              <pre>{cut(typeof c.arguments === 'string' ? prettyText(c.arguments) : json(c.arguments), clip)}</pre>
            </div>
          ))}
          {showRaw && (
            <details class="raw">
              <summary>raw</summary>
              <pre>{cut(json(raw), clip)}</pre>
            </details>
          )}
        </li>
      );
    })}
  </ol>
);
