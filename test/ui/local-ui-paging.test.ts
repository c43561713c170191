/**
 * The local inspector's listings page through any store size (no fixed scan
 * limit): the run list (with the filters the store cannot apply itself), a
 * long run's timeline and the quarantine, followed link by link over real HTTP
 * (`serveLocalUi` in this process, on 127.0.0.1 port 0) on a real SQLite file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { ErrorCode } from '../../shared/errors.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-local-ui-paging-');
let a: SqliteCheckpointer;
let b: SqliteCheckpointer;
let ui: LocalUi;

beforeAll(async () => {
  const db = tmp.file('many.db');
  a = new SqliteCheckpointer({ path: db, writerId: 'laptop-a' });
  // a second writer on the same file (another process of the same machine, say)
  b = new SqliteCheckpointer({ path: db, writerId: 'laptop-b' });
  for (let i = 0; i < 120; i++) await (i % 10 === 3 ? b : a).put(step(`run-${String(i).padStart(3, '0')}`, 0));
  let prev: string | null = null;
  for (let i = 0; i < 450; i++) prev = (await a.put({ ...step('long-run', i), prevId: prev })).id;
  for (let i = 0; i < 120; i++)
    await a.putIdempotent('long-run', `charge:${String(i).padStart(3, '0')}`, { receipt: i });
  for (let i = 0; i < 60; i++) {
    const e = await a.put(step(`refused-${String(i).padStart(2, '0')}`, 0));
    await a.markQuarantined({ [e.id]: `plane: invalid_row: refusal ${i}` });
  }
  ui = await serveLocalUi(a, { port: 0 });
});
afterAll(async () => {
  await ui?.close();
  await a?.close();
  await b?.close();
  tmp.cleanup();
});

/** Follow `rel`-ish "next" links from `path`, collecting what `pick` finds on each page. */
async function follow(path: string, next: RegExp, pick: RegExp): Promise<{ items: string[]; pages: number }> {
  const items: string[] = [];
  let pages = 0;
  for (let url: string | null = `${ui.url}${path}`; url; pages++) {
    const r = await fetch(url);
    expect(r.status).toBe(200);
    const html = await r.text();
    items.push(...[...html.matchAll(pick)].map((m) => m[1]));
    const n = next.exec(html);
    url = n ? `${ui.url}${n[1].replace(/&amp;/g, '&')}` : null;
  }
  return { items, pages };
}

describe('local inspector paging', () => {
  it('the run list pages through every run once, in execution-id order; filters apply across pages', async () => {
    const all = await follow('/', /<a href="([^"]+)" rel="next">/, /<a href="\/runs\/([^"]+)" title=/g);
    expect(all.pages).toBe(Math.ceil((120 + 1 + 60) / 50));
    expect(all.items).toHaveLength(181);
    expect(all.items).toEqual([...all.items].sort());
    expect(new Set(all.items).size).toBe(181);
    // filters the store does not apply itself: a prefix, and the writer of the newest row
    const prefixed = await follow('/?q=run-1', /<a href="([^"]+)" rel="next">/, /<a href="\/runs\/([^"]+)" title=/g);
    expect(prefixed.items).toEqual(Array.from({ length: 20 }, (_, i) => `run-1${String(i).padStart(2, '0')}`));
    const byB = await follow('/?writer=laptop-b', /<a href="([^"]+)" rel="next">/, /<a href="\/runs\/([^"]+)" title=/g);
    expect(byB.items).toEqual(Array.from({ length: 12 }, (_, i) => `run-${String(i * 10 + 3).padStart(3, '0')}`));
    const none = await (await fetch(`${ui.url}/?status=paused`)).text();
    expect(none).toContain('No runs match.');
  });

  it("a long run's timeline pages by seq from its newest rows back and from its first rows on; its idempotency entries by key; the quarantine pages by outbox id", async () => {
    // from the newest page back: each page in seq order, every row once
    const back = await follow('/runs/long-run', /<a href="([^"]+)" rel="prev">/, /<li class="[^"]*" id="seq-(\d+)">/g);
    expect(back.pages).toBe(9);
    const pages: number[][] = [];
    for (let i = 0; i < back.items.length; i += 50) pages.push(back.items.slice(i, i + 50).map(Number));
    expect(pages.reverse().flat()).toEqual(Array.from({ length: 450 }, (_, i) => i));
    // from the first rows on
    const on = await follow(
      '/runs/long-run?from=0',
      /<a href="([^"]+)" rel="next">/,
      /<li class="[^"]*" id="seq-(\d+)">/g,
    );
    expect(on.pages).toBe(9);
    expect(on.items.map(Number)).toEqual(Array.from({ length: 450 }, (_, i) => i));
    // its idempotency entries page by key (a run may record many large effect results), each once
    const effects = await follow(
      '/runs/long-run',
      /<a href="([^"]+)">More entries →<\/a>/,
      /<code>charge:(\d+)<\/code>/g,
    );
    expect(effects.pages).toBe(6);
    expect(effects.items.map(Number)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    expect((await fetch(`${ui.url}/runs/long-run?idem=x`)).status).toBe(400);
    // paging one part of the page keeps the others: the timeline's page in the entries' links, and the reverse
    const html = await (await fetch(`${ui.url}/runs/long-run?a=3&b=4&from=0`)).text();
    const nextRows = /<a href="([^"]+)" rel="next">/.exec(html)![1].replace(/&amp;/g, '&');
    const moreEntries = /<a href="([^"]+)">More entries →<\/a>/
      .exec(await (await fetch(`${ui.url}${nextRows}`)).text())![1]
      .replace(/&amp;/g, '&');
    const kept = new URL(moreEntries, ui.url).searchParams;
    expect([kept.get('a'), kept.get('b'), kept.get('from'), kept.get('idem') !== null]).toEqual(['3', '4', '50', true]);
    const q = await follow('/quarantine', /<a href="([^"]+)">Next →<\/a>/, /refusal (\d+)/g);
    expect(q.pages).toBe(2);
    expect(q.items.map(Number)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it('a cursor it did not issue is a 400, not a 500; a row that is not there is said', async () => {
    for (const path of ['/?cursor=x', '/runs/long-run?idem=eyJhIjoxfQ', '/quarantine?cursor=%5B%5D'])
      expect((await fetch(`${ui.url}${path}`)).status, path).toBe(400);
    // a timeline page the page's links never name: 400 naming it
    for (const path of ['/runs/long-run?from=x', '/runs/long-run?before=-1', '/runs/long-run?step=tool'])
      expect((await fetch(`${ui.url}${path}`)).status, path).toBe(400);
    expect(await (await fetch(`${ui.url}/runs/long-run?a=0&b=900`)).text()).toContain(
      'seq 900 is not a row of this run',
    );
    const badCursor = await fetch(`${ui.url}/?cursor=x`);
    expect(badCursor.headers.get('content-type')).toContain('text/html');
    const badCursorText = await badCursor.text();
    expect(badCursorText).toContain('BAD_CURSOR');
    // in the local UI's own frame (its nav), not the plane's
    expect(badCursorText).toContain('href="/approvals"');
    expect(badCursorText).not.toContain('href="/keys"');
    // a filter the form cannot send: 400 naming every problem, not the unfiltered list
    const badFilters = await fetch(`${ui.url}/?status=bogus&since=xyz`);
    expect(badFilters.status).toBe(400);
    const named = await badFilters.text();
    expect(named).toContain('INVALID_REQUEST');
    expect(named).toContain(
      'status: must be &#39;running&#39;, &#39;paused&#39;, &#39;completed&#39;, &#39;failed&#39; or &#39;cancelled&#39; (got &quot;bogus&quot;)',
    );
    expect(named).toContain('since: must be &#39;1h&#39;, &#39;24h&#39;, &#39;7d&#39; or &#39;30d&#39;');
    expect((await fetch(`${ui.url}/?status=paused&since=24h`)).status).toBe(200);
    // a name every object inherits is no window
    for (const since of ['toString', 'constructor', '__proto__'])
      expect((await fetch(`${ui.url}/?since=${since}`)).status, since).toBe(400);
    expect(named).not.toContain('href="/keys"');
    expect(await (await fetch(`${ui.url}/approvals?cursor=x`)).text()).toContain('BAD_CURSOR');
    // numbers past the safe integers: a cursor is not one it issued (400), a seq in the query is no seq (the page, as without it)
    const huge = Buffer.from('1e20').toString('base64url');
    for (const path of [
      `/runs/long-run?idem=${huge}`,
      `/quarantine?cursor=${huge}`,
      '/runs/long-run?seq=99999999999999999999',
    ])
      expect((await fetch(`${ui.url}${path}`)).status, path).toBe(400);
    for (const path of ['/runs/long-run?b=99999999999999999999', '/runs/long-run?a=99999999999999999999&b=3'])
      expect((await fetch(`${ui.url}${path}`)).status, path).toBe(200);
  });

  it('refuses a non-loopback host without allowRemote (INVALID_OPTIONS), and serves nothing', async () => {
    await expect(serveLocalUi(a, { host: '0.0.0.0', port: 0 })).rejects.toMatchObject({
      code: ErrorCode.INVALID_OPTIONS,
      message: expect.stringContaining("host '0.0.0.0' is not a loopback address"),
    });
  });
});
