/** @jsxImportSource hono/jsx */
/**
 * The inspector's page frame and the pieces every page uses (badges, times,
 * ids, the table wrapper). Server-rendered; hono/jsx escapes every interpolated value.
 */
import { raw } from 'hono/html';
import { isValidElement, useContext, type Child, type FC } from 'hono/jsx';
import type { Json } from '../shared/json.js';
import { printable, terminalSafe } from '../support/terminal.js';
import type { Counted } from '../support/count.js';
import { FRAME } from './frame.js';
import { STYLE } from './style.js';

/**
 * `live`: the page loads /ui/live.js, which updates its `data-live` regions in place (a person turns it on
 * with `?live=1`, see `LiveToggle`; live.ts). The nav and the Log out button come from the page's frame
 * (plane or local store, see frame.ts): the link to the request's page is marked `aria-current`, and the
 * approvals link says how many pauses wait. Every page loads /ui/shortcuts.js, whose keys the footer lists.
 */
export const Layout: FC<{ title: string; nav?: boolean; live?: boolean; children?: Child }> = ({
  title,
  nav = true,
  live,
  children,
}) => {
  const frame = useContext(FRAME);
  const approvals = frame.nav.some((l) => l.href === '/approvals');
  // the doctype keeps the browser in standards mode (without it, quirks mode lays pages out differently)
  return (
    <>
      {raw('<!doctype html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="color-scheme" content="light dark" />
          <title>{`${title} · waymark`}</title>
          <style dangerouslySetInnerHTML={{ __html: STYLE }} />
          <link rel="icon" href="/ui/icon.svg" type="image/svg+xml" />
          <script src="/ui/local-time.js" defer></script>
          <script src="/ui/shortcuts.js" defer></script>
          {live && <script src="/ui/live.js" defer></script>}
        </head>
        <body>
          <header>
            <span class="brand">waymark</span>
            {frame.subtitle && (
              <span class="muted mono" data-testid="store">
                {frame.subtitle}
              </span>
            )}
            {frame.recordingAs && (
              <span class="muted" data-testid="recording-as">
                recording decisions as <strong>{frame.recordingAs}</strong>
              </span>
            )}
            {nav && (
              <nav aria-label="main">
                {frame.nav.map((l) => (
                  <a href={l.href} aria-current={frame.path === l.href ? 'page' : undefined}>
                    {l.label}
                    {l.href === '/approvals' && <PendingCount c={frame.pendingApprovals} />}
                  </a>
                ))}
              </nav>
            )}
            {nav && frame.logout && (
              <form method="post" action="/logout">
                <input type="hidden" name="csrf" value={frame.logout} />
                <button type="submit" class="link">
                  Log out
                </button>
              </form>
            )}
          </header>
          <main>{children}</main>
          {nav && <KeyboardHelp approvals={approvals} />}
        </body>
      </html>
    </>
  );
};

/** The approvals link's count: nothing when none waits (or it was not counted). */
const PendingCount: FC<{ c: Counted | null | undefined }> = ({ c }) =>
  c && c.n > 0 ? (
    <>
      {' '}
      <span
        class="count"
        data-testid="pending-count"
        title={`${c.more ? `more than ${num(c.n)}` : num(c.n)} paus${c.n === 1 && !c.more ? 'e' : 'es'} waiting for an answer`}
      >
        {c.more ? `${num(c.n)}+` : num(c.n)}
      </span>
    </>
  ) : null;

/**
 * The keys /ui/shortcuts.js (shortcuts.ts) answers, listed on every page; `?` opens the list. A page works the
 * same without them (and without JavaScript); the script shows the button that turns them off.
 */
const KeyboardHelp: FC<{ approvals: boolean }> = ({ approvals }) => (
  <footer>
    <details id="keyboard" data-testid="keyboard">
      <summary>Keyboard shortcuts</summary>
      <p>With JavaScript on, and never while typing in a field:</p>
      <dl class="keys">
        <dt>
          <kbd>/</kbd>
        </dt>
        <dd>search the run list</dd>
        <dt>
          <kbd>j</kbd> / <kbd>k</kbd>
        </dt>
        <dd>next / previous run in a list (Enter opens it)</dd>
        <dt>
          <kbd>g</kbd> then <kbd>r</kbd>
        </dt>
        <dd>go to Runs</dd>
        {approvals && (
          <>
            <dt>
              <kbd>g</kbd> then <kbd>a</kbd>
            </dt>
            <dd>go to Pending approvals</dd>
          </>
        )}
        <dt>
          <kbd>?</kbd>
        </dt>
        <dd>open this list</dd>
      </dl>
      <button type="button" class="link" data-shortcuts-toggle="" hidden>
        Turn keyboard shortcuts off
      </button>
    </details>
  </footer>
);

/** A count (rows, tokens, bytes, runs) with thousands separators, as a person reads it: 12,345. Every page's numbers go through it. */
export const num = (n: number) => n.toLocaleString('en-US');

/** A writer id cut to its tail (a long id is a UUID, whose tail is its random part); a short one whole. */
export const shortWriterId = (id: string) => (id.length <= 12 ? id : `…${id.slice(-8)}`);

/**
 * A writer as the page's frame knows it: "name (short id)" where it has a name (on a plane, the name of the key
 * the writer sends with; in `waymark ui`, "this store" for its own), the short id otherwise; the full id on hover.
 * A name is another person's text: its characters a terminal acts on show as escapes (support/terminal.ts).
 */
export const Writer: FC<{ id: string | null }> = ({ id }) => {
  const names = useContext(FRAME).writerNames;
  if (!id) return <span class="muted">—</span>;
  const name = names?.get(id);
  return (
    <span class="writer" title={id} data-writer={id}>
      {name ? (
        <>
          {printable(name)} <span class="mono">({shortWriterId(id)})</span>
        </>
      ) : (
        <span class="mono">{shortWriterId(id)}</span>
      )}
    </span>
  );
};

/** A status as a coloured badge. */
export const Badge: FC<{ status: string }> = ({ status }) => (
  <span class={`badge s-${status.replace(/\s+/g, '-')}`}>{status}</span>
);
/** A value as indented JSON text. */
export const json = (v: Json | unknown) => JSON.stringify(v, null, 2);

/** Text that is JSON shown pretty (a tool's arguments or result as the model saw them); anything else as it is. */
export const prettyText = (text: string) => {
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

/** A value shown pretty: JSON indented, and text that holds JSON (arguments a model sent as a string) as that JSON. */
export const pretty = (v: Json | undefined) => (typeof v === 'string' ? prettyText(v) : v === undefined ? '' : json(v));
/** How long ago, as a person says it ('never' for none). */
export const ago = (iso: string | null) => {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 90
    ? `${s}s ago`
    : s < 5400
      ? `${Math.round(s / 60)}m ago`
      : s < 129600
        ? `${Math.round(s / 3600)}h ago`
        : `${Math.round(s / 86400)}d ago`;
};

/**
 * A time as UTC text (what a page without scripts shows), marked for
 * /ui/local-time.js to rewrite in the reader's zone; UTC stays on hover (a
 * relative time carries it; the script moves an absolute time's text there).
 */
export const Time: FC<{ iso: string | null; relative?: boolean }> = ({ iso, relative }) => {
  if (!iso) return <span>never</span>;
  const utc = `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
  return (
    <time datetime={iso} title={relative ? utc : undefined} data-local={relative ? 'relative' : 'absolute'}>
      {relative ? ago(iso) : utc}
    </time>
  );
};

/** Milliseconds as a person reads a duration. */
export const duration = (ms: number) =>
  ms < 1000
    ? `${Math.max(0, Math.round(ms))} ms`
    : ms < 90_000
      ? `${(ms / 1000).toFixed(1)} s`
      : ms < 5_400_000
        ? `${Math.round(ms / 60_000)} min`
        : `${(ms / 3_600_000).toFixed(1)} h`;

/** A long id shortened for narrow cells, the full value on hover and for copying. */
export const ShortId: FC<{ id: string | null; max?: number }> = ({ id, max = 24 }) => {
  if (!id) return <span class="muted">—</span>;
  if (id.length <= max) return <span class="mono">{id}</span>;
  return (
    <span class="mono" title={id}>
      {`${id.slice(0, max - 9)}…${id.slice(-8)}`}
    </span>
  );
};

/**
 * The link that turns live updates on or off for the page it is on (a link: it works without JavaScript), and,
 * when on, the polite status where live.js says what it updated.
 */
export const LiveToggle: FC<{ href: (live: boolean) => string; live: boolean }> = ({ href, live }) => (
  <p class="live muted" data-testid="live">
    {live ? (
      <>
        Live: changes show here as they arrive · <a href={href(false)}>stop</a>
        <noscript> · live updates need JavaScript, which is off: reload the page to see changes</noscript>{' '}
        <span role="status" aria-live="polite" data-live-status="" data-testid="live-status"></span>
      </>
    ) : (
      <a href={href(true)}>Show changes live</a>
    )}
  </p>
);

/** A part of a live page that live.js replaces in place when it changed (`name` is said in its status); never put a form in one. */
export const LiveRegion: FC<{ name: string; children?: Child }> = ({ name, children }) => (
  <div data-live={name}>{children}</div>
);

/** Said wherever a run is shown whose copy on the plane has holes (a row refused, or a seq below the newest never received). */
export const Incomplete: FC<{ holeCount: number }> = ({ holeCount }) => (
  <span
    class="badge s-failed"
    data-testid="incomplete"
    title={`${holeCount ? `${holeCount} row(s) of this run were refused by the plane` : 'rows of this run never reached the plane'}: its copy here is incomplete`}
  >
    incomplete
  </span>
);

/**
 * Text another person wrote (a cancel's reason) as a page shows it, by the rule the CLI prints it with
 * (support/terminal.ts): every character that can rewrite what is shown around it (a control, a bidi
 * override that reverses the text after it) as its escape, line breaks and tabs kept; a CR LF pair (what a
 * browser's text box sends) is one line break. Markup needs nothing here: hono/jsx escapes every value.
 */
export const pageText = (text: string) => terminalSafe(text.replace(/\r\n/g, '\n'));

/** Text cut to `max` characters, an ellipsis marking the cut. */
export const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** A column of a `Table`: its heading, with a class when it has one (a false entry is left out). */
export type Column = string | { label: string; class: string } | false;

/** An id (`agent:refund-bot`, `turn:0/tool:refund`) that may wrap only after its `:` and `/` separators. */
export const Id: FC<{ id: string }> = ({ id }) => (
  <>
    {id.split(/(?<=[:/])/).map((part, i) =>
      i === 0 ? (
        part
      ) : (
        <>
          <wbr />
          {part}
        </>
      ),
    )}
  </>
);

const label = (c: Column) => (c === false ? null : typeof c === 'string' ? c : c.label);

const flatten = (children: Child[]): Child[] => children.flatMap((c) => (Array.isArray(c) ? flatten(c) : [c]));

/** Gives each cell of the body rows its column's heading (`data-label`), which the phone layout shows beside the value. */
function labelCells(rows: Child, labels: string[]): void {
  if (Array.isArray(rows)) {
    for (const r of rows) labelCells(r, labels);
    return;
  }
  if (!isValidElement(rows) || rows.tag !== 'tr') return;
  let column = 0;
  for (const cell of flatten(rows.children as Child[])) {
    if (!isValidElement(cell) || cell.tag !== 'td') continue;
    const span = Number(cell.props.colspan ?? 1);
    if (span === 1 && labels[column] && cell.props['data-label'] === undefined)
      cell.props['data-label'] = labels[column];
    column += span;
  }
}

/**
 * A table in its scrolling wrapper: one heading row of `columns`, then the body rows given as children.
 * On a phone the rows stack, each cell under its column's heading, so nothing is off-screen.
 */
export const Table: FC<{ columns: Column[]; class?: string; children?: Child }> = ({
  columns,
  class: cls,
  children,
}) => {
  const shown = columns.filter((c) => c !== false);
  labelCells(children, shown.map(label) as string[]);
  return (
    <div class="table-wrap">
      <table class={cls}>
        <thead>
          <tr>{shown.map((c) => (typeof c === 'string' ? <th>{c}</th> : <th class={c.class}>{c.label}</th>))}</tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
};
