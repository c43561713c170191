/** @jsxImportSource hono/jsx */
/**
 * A page sent in two parts: its start (the document's head, the nav and what is read first) as soon as it is
 * rendered, then the rest once read, in the one response. A browser paints what it has parsed while the rest is
 * still on its way, so the first paint of a long page waits neither for its slower reads nor for the parsing of
 * all of it. No script moves anything into place (the pages' CSP allows no inline script): the rest is the
 * document's next bytes, where `<Later>` stood.
 *
 * Everything that decides the status (a 404, a 400) is decided before the first byte. An error while the rest is
 * read or rendered, after it, can no longer change the status: the page says so where the rest would be, and the
 * document ends as any other does.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { type Child, type FC, useContext } from 'hono/jsx';
import { HtmlEscapedCallbackPhase, raw, resolveCallback } from 'hono/utils/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { isErrorCode } from '../shared/errors.js';
import { FRAME, type Frame } from './frame.js';

/**
 * Where the rest of one page goes: a marker its start renders, and what `<Later>` was given to render there (with
 * the frame it stood in). One per response.
 */
export interface Deferral {
  readonly mark: string;
  rest?: () => Promise<Child>;
  frame?: Frame;
}

/** A new place for one response's rest (its marker a comment no escaped text can spell). */
export const deferral = (): Deferral => ({ mark: `<!--waymark:rest:${randomUUID()}-->` });

/**
 * The place of the rest of a page: rendered, it is the marker; `rest` (its reads and its markup) is called only
 * after the start is sent, and rendered in the frame `<Later>` stood in.
 */
export const Later: FC<{ slot: Deferral; rest: () => Promise<Child> }> = ({ slot, rest }) => {
  slot.rest = rest;
  slot.frame = useContext(FRAME);
  return raw(slot.mark);
};

/** A rendered page (a JSX expression as it evaluates) as its one string. */
const render = async (page: Child | Promise<HtmlEscapedString>): Promise<string> =>
  String(await resolveCallback(page as HtmlEscapedString, HtmlEscapedCallbackPhase.Stringify, false, {}));

/** Said where the rest of the page would be when reading it failed after the start was sent (code: the error's, if it has one). */
const Stopped: FC<{ code: string | null }> = ({ code }) => (
  <section aria-labelledby="stopped-h" class="card failed" data-testid="page-stopped">
    <h2 id="stopped-h" class="error">
      The rest of this page could not be read{code ? `: ${code}` : ''}
    </h2>
    <p>Its start above was sent before the failure. Reload the page to try again.</p>
  </section>
);

export interface SendInTwo {
  /**
   * Read and render the rest before the first byte and answer the whole page at once: a part whose read can refuse
   * the request (a cursor the source did not issue: a 400) is read before the status is sent.
   */
  whole: boolean;
  /** Told of an error that happened after the first byte (the page shows that it stopped, the status stays). */
  onError?: (e: unknown) => void;
}

/**
 * Answer `page` (a page in its frame whose start rendered `<Later slot>`) 200 in two parts: the start once rendered,
 * the rest when read. A page that did not render `<Later>` is answered whole.
 */
export async function sendInTwo(
  c: Context,
  page: Child | Promise<HtmlEscapedString>,
  slot: Deferral,
  o: SendInTwo,
): Promise<Response> {
  const html = await render(page);
  const at = html.indexOf(slot.mark);
  if (at < 0 || !slot.rest) return c.html(html);
  const start = html.slice(0, at);
  const end = html.slice(at + slot.mark.length);
  const rest = slot.rest;
  const frame = slot.frame!;
  const restHtml = async () => render(<FRAME.Provider value={frame}>{await rest()}</FRAME.Provider>);
  if (o.whole) return c.html(start + (await restHtml()) + end);
  const encoder = new TextEncoder();
  let started = false;
  let cancelled = false;
  // pulled one part at a time: the rest's reads start once the consumer took the start
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(start));
          return;
        }
        // a store's reads may never leave the microtask queue (SQLite's are synchronous, PGlite's run in this thread):
        // one turn of the event loop first, so the start is written to the socket before they hold the thread
        await new Promise((resolve) => setImmediate(resolve));
        let middle: string;
        try {
          middle = await restHtml();
        } catch (e) {
          o.onError?.(e);
          const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
          middle = await render(<Stopped code={isErrorCode(code) ? code : null} />);
        }
        if (cancelled) return;
        controller.enqueue(encoder.encode(middle + end));
        controller.close();
      },
      cancel() {
        cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  // chunked said outright: @hono/node-server otherwise waits for a second chunk to learn the length of a short body
  return c.body(body, 200, { 'content-type': 'text/html; charset=UTF-8', 'transfer-encoding': 'chunked' });
}
