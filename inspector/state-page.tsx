/** @jsxImportSource hono/jsx */
/**
 * A run's state at one row, in two sizes. On the run page, its tail (`StateTail`): the newest messages of the
 * conversation (at most `STATE_TAIL`, and `TAIL_BYTES` of them) and the other fields cut to a few kB, so a long
 * run's page does not carry its whole conversation on every load and every live update; and the state's own page
 * (`/runs/:id/state?seq=N`, `StatePage`) with all of it, the conversation paged by `STATE_PAGE` messages.
 */
import type { FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import { Conversation } from './conversation.js';
import { json, Layout, num } from './layout.js';
import { rowHref } from './timeline.js';

/** How many of the newest messages the run page shows. */
export const STATE_TAIL = 8;
/** The most message JSON (characters) the run page's tail shows; the newest message is shown in any case, cut. */
const TAIL_BYTES = 16_000;
/** Characters of one message's text the tail shows before cutting it. */
const TAIL_CLIP = 2_000;
/** Characters of the other state fields (as JSON) the run page shows before cutting them. */
const FIELDS_SHOWN = 4_000;
/** Messages per page of the state's own page. */
export const STATE_PAGE = 25;

/** The state's own page: the state of row `seq`, its conversation from message `from` (absent: the newest page). */
export const stateHref = (executionId: string, seq: number, from?: number) =>
  `/runs/${encodeURIComponent(executionId)}/state?seq=${seq}${from === undefined ? '' : `&from=${from}`}#messages`;

const messagesOf = (state: Record<string, Json>): Json[] | null =>
  Array.isArray(state.messages) ? (state.messages as Json[]) : null;
const otherFields = (state: Record<string, Json>) =>
  Object.fromEntries(Object.entries(state).filter(([k]) => k !== 'messages'));

/** Where the run page's tail starts: the newest `STATE_TAIL` messages that fit in `TAIL_BYTES`, one at least. */
export function tailStart(messages: Json[]): number {
  let bytes = 0;
  let start = messages.length;
  while (start > 0 && messages.length - start < STATE_TAIL) {
    bytes += Math.min(JSON.stringify(messages[start - 1]).length, TAIL_CLIP);
    if (bytes > TAIL_BYTES && start < messages.length) break;
    start--;
  }
  return start;
}

/** The run page's state part: the newest messages and the other fields, bounded, and the link to all of it. */
export const StateTail: FC<{ executionId: string; seq: number; state: Record<string, Json> }> = (p) => {
  const messages = messagesOf(p.state);
  const start = messages ? tailStart(messages) : 0;
  const fields = otherFields(p.state);
  const fieldsText = json(fields);
  const whole = stateHref(p.executionId, p.seq);
  return (
    <section aria-labelledby="state-h">
      <h2 id="state-h">State at #{p.seq}</h2>
      {messages ? (
        <details open>
          <summary>
            Conversation: {num(messages.length)} message{messages.length === 1 ? '' : 's'}
            {start > 0 && `, the newest ${messages.length - start} below`}
          </summary>
          {start > 0 && (
            <p class="muted" data-testid="state-earlier">
              {num(start)} earlier message{start === 1 ? '' : 's'} on <a href={whole}>the state&rsquo;s own page</a>.
            </p>
          )}
          <Conversation messages={messages.slice(start)} from={start} clip={TAIL_CLIP} />
        </details>
      ) : (
        <p class="muted">no messages</p>
      )}
      {Object.keys(fields).length > 0 && (
        <>
          <h3>Other state fields</h3>
          <pre>
            {fieldsText.length > FIELDS_SHOWN
              ? `${fieldsText.slice(0, FIELDS_SHOWN)}… (${fieldsText.length - FIELDS_SHOWN} more characters)`
              : fieldsText}
          </pre>
        </>
      )}
      <p>
        <a href={whole} data-testid="state-whole">
          The whole state at #{p.seq}
        </a>
      </p>
    </section>
  );
};

export interface StatePageProps {
  executionId: string;
  seq: number;
  /** the decoded state (null: it cannot be shown, `error` says why) */
  state: Record<string, Json> | null;
  error: string | null;
  /** the first message shown (null: the newest page) */
  from: number | null;
}

/** The state of one row, whole: the conversation a page of `STATE_PAGE` messages at a time, and every other field. */
export const StatePage: FC<StatePageProps> = (p) => {
  const id = p.executionId;
  const messages = p.state ? messagesOf(p.state) : null;
  const n = messages?.length ?? 0;
  const from = Math.min(p.from ?? Math.max(0, n - STATE_PAGE), Math.max(0, n - 1));
  const to = Math.min(n, from + STATE_PAGE);
  const link = (f: number) => stateHref(id, p.seq, f);
  const fields = p.state ? otherFields(p.state) : {};
  return (
    <Layout title={`${id} at #${p.seq}`}>
      <h1>
        State of run <a href={`/runs/${encodeURIComponent(id)}`}>{id}</a> at <a href={rowHref(id, p.seq)}>#{p.seq}</a>
      </h1>
      {p.error && <p class="error">{p.error}</p>}
      {messages && (
        <section aria-labelledby="messages">
          <h2 id="messages">
            Conversation: {num(n)} message{n === 1 ? '' : 's'}
            {n > STATE_PAGE && `, #${from}–#${to - 1} below`}
          </h2>
          <Pager n={n} from={from} to={to} link={link} />
          <Conversation messages={messages.slice(from, to)} from={from} />
          <Pager n={n} from={from} to={to} link={link} />
        </section>
      )}
      {p.state && !messages && <p class="muted">no messages</p>}
      {Object.keys(fields).length > 0 && (
        <section aria-labelledby="fields-h">
          <h2 id="fields-h">Other state fields</h2>
          <pre>{json(fields)}</pre>
        </section>
      )}
    </Layout>
  );
};

const Pager: FC<{ n: number; from: number; to: number; link: (from: number) => string }> = ({ n, from, to, link }) =>
  n > STATE_PAGE ? (
    <div class="pager">
      {from > 0 && <a href={link(0)}>First messages</a>}
      {from > 0 && (
        <a href={link(Math.max(0, from - STATE_PAGE))} rel="prev">
          ← Earlier messages
        </a>
      )}
      {to < n && (
        <a href={link(to)} rel="next">
          Later messages →
        </a>
      )}
      {to < n && <a href={link(Math.max(0, n - STATE_PAGE))}>Newest messages</a>}
    </div>
  ) : null;
