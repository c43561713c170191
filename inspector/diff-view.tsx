/** @jsxImportSource hono/jsx */
/**
 * The run page's state diff (diff.ts) as it shows it: the messages added and removed as a conversation (text,
 * tool calls with their arguments and tool results pretty-printed, as a row's page shows them), and each changed
 * field's values pretty-printed. A few messages of each, cut: the state's own page has every one.
 */
import type { FC } from 'hono/jsx';
import { Conversation } from './conversation.js';
import type { StateDiff } from './diff.js';
import { num, pretty, Table } from './layout.js';
import { stateHref } from './state-page.js';
import { rowHref } from './timeline.js';

/** How many messages a diff shows of those added (and of those removed); the state's own page has every one. */
const DIFF_SHOWN = 10;
/** Characters of one message's text (and of a field's value) a diff shows before cutting it. */
const DIFF_CLIP = 2_000;

const cut = (text: string) => (text.length <= DIFF_CLIP ? text : `${text.slice(0, DIFF_CLIP)}… (cut)`);

export const DiffView: FC<{ executionId: string; a: number; b: number; result: StateDiff }> = ({
  executionId: id,
  a,
  b,
  result: r,
}) => (
  <div class="diff" data-testid="diff">
    <p>
      <a href={rowHref(id, a)}>#{a}</a> → <a href={rowHref(id, b)}>#{b}</a>: {num(r.common)} message
      {r.common === 1 ? '' : 's'} in common; {num(r.added.length)} added
      {r.removed.length > 0 && `, ${num(r.removed.length)} removed`}; {num(r.changed.length)} field
      {r.changed.length === 1 ? '' : 's'} changed.
    </p>
    {r.added.length > 0 && (
      <div class="added" data-testid="diff-added">
        <Conversation
          messages={r.added.slice(0, DIFF_SHOWN)}
          from={r.common}
          clip={DIFF_CLIP}
          anchors={false}
          raw={false}
        />
      </div>
    )}
    {r.removed.length > 0 && (
      <div class="removed" data-testid="diff-removed">
        <Conversation
          messages={r.removed.slice(0, DIFF_SHOWN)}
          from={r.common}
          clip={DIFF_CLIP}
          anchors={false}
          raw={false}
        />
      </div>
    )}
    {Math.max(r.added.length, r.removed.length) > DIFF_SHOWN && (
      <p class="muted" data-testid="diff-more">
        The first {DIFF_SHOWN} of each are shown; the whole conversation at #{b} is on{' '}
        <a href={stateHref(id, b)}>the state&rsquo;s own page</a>.
      </p>
    )}
    {r.changed.length > 0 && (
      <Table columns={['Field', 'Before', 'After']}>
        {r.changed.map((c) => (
          <tr>
            <td class="mono">{c.field}</td>
            <td>{c.before === undefined ? <span class="muted">(absent)</span> : <pre>{cut(pretty(c.before))}</pre>}</td>
            <td>{c.after === undefined ? <span class="muted">(absent)</span> : <pre>{cut(pretty(c.after))}</pre>}</td>
          </tr>
        ))}
      </Table>
    )}
  </div>
);
