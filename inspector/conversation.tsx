/** @jsxImportSource hono/jsx */
/** A run's messages shown as a conversation (the run page's state). */
import type { FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import { json } from './layout.js';

/** Text that is JSON shown pretty; anything else as it is. */
const prettyText = (text: string) => {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return json(JSON.parse(t));
    } catch {
      // not JSON after all
    }
  }
  return text;
};

/** A run's messages as a conversation: who said what, tool calls with their arguments, tool results. Raw JSON one click away. */
export const Conversation: FC<{ messages: Json[] }> = ({ messages }) => (
  <ol class="conversation">
    {messages.map((raw, i) => {
      const m = (raw ?? {}) as {
        role?: string;
        content?: unknown;
        toolCalls?: { id?: string; name?: string; arguments?: Json }[];
        name?: string;
        toolCallId?: string;
      };
      const role = typeof m.role === 'string' ? m.role : 'message';
      return (
        <li class={`msg msg-${role.replace(/[^a-z]/g, '')}`} id={`msg-${i}`}>
          <div class="msg-role">
            {role === 'tool' ? (
              <>
                tool result <span class="mono">{m.name ?? ''}</span>
              </>
            ) : (
              role
            )}
          </div>
          {typeof m.content === 'string' && m.content !== '' && (
            <pre class="msg-text">{role === 'tool' ? prettyText(m.content) : m.content}</pre>
          )}
          {m.content !== undefined && m.content !== null && typeof m.content !== 'string' && (
            <pre class="msg-text">{json(m.content)}</pre>
          )}
          {Array.isArray(m.toolCalls) &&
            m.toolCalls.map((c) => (
              <div class="tool-call">
                calls <strong class="mono">{c.name ?? '?'}</strong>
                <pre>{typeof c.arguments === 'string' ? prettyText(c.arguments) : json(c.arguments ?? null)}</pre>
              </div>
            ))}
          <details class="raw">
            <summary>raw</summary>
            <pre>{json(raw)}</pre>
          </details>
        </li>
      );
    })}
  </ol>
);
