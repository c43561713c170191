/**
 * The one follower behind the change feed and the decision feed
 * (client/replica/feed-follower.ts), against a real HTTP server on 127.0.0.1
 * and a SQLite store: a refused round backs off and is tried again, a page's
 * items are handled in order before its cursor is saved, the next request asks
 * after it; stop() ends a held request at once and closes the connection.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FeedFollower } from '../../client/replica/feed-follower.js';
import { PlaneHttp } from '../../client/replica/http.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-feed-follower-');
afterAll(() => tmp.cleanup());
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const Page = z.object({ items: z.array(z.string()), nextCursor: z.string() });

type Answer = { status: number; body: unknown } | null;

/** A feed server: `answer` decides each request (null: hold it until the client goes away; a promise: hold it until it settles). */
async function feedServer(answer: (url: URL, n: number) => Answer | Promise<Answer>) {
  const asked: URL[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    asked.push(url);
    const a = await answer(url, asked.length);
    if (!a || res.destroyed) return;
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanup.push(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

function follower(url: string, handled: string[], o: { timeoutMs?: number } = {}) {
  const store = new SqliteCheckpointer({ path: tmp.file(`f-${Date.now()}-${Math.random()}.db`) });
  const http = new PlaneHttp(url, { connections: 1 });
  const feed = new FeedFollower({
    name: 'test feed',
    path: '/v1/test',
    page: Page,
    store,
    cursorKey: async () => 'test.cursor',
    get: (path, timeoutMs, signal) => http.request('GET', path, { apiKey: 'k', timeoutMs, signal }),
    handle: async (items) => {
      handled.push(...items);
      return items.length;
    },
    backoff: { baseMs: 5, capMs: 20 },
    waitSeconds: 1,
    timeoutMs: o.timeoutMs,
    close: () => http.close(),
  });
  cleanup.push(async () => {
    await feed.stop();
    await store.close();
  });
  return { store, http, feed };
}

async function until(pred: () => boolean | Promise<boolean>) {
  while (!(await pred())) await new Promise((r) => setTimeout(r, 5));
}

describe('FeedFollower', () => {
  it('a refused round is reported and tried again after a backoff; a page is handled in order, then its cursor saved and asked after', async () => {
    // the retry is held until the test has read the first round's error
    let release!: () => void;
    const seenError = new Promise<void>((r) => (release = r));
    const srv = await feedServer(async (url, n) => {
      if (n === 1) return { status: 503, body: { error: { code: 'UNAVAILABLE', message: 'restarting' } } };
      if (n === 2) await seenError;
      if (!url.searchParams.get('after')) return { status: 200, body: { items: ['a', 'b'], nextCursor: '2' } };
      return { status: 200, body: { items: [], nextCursor: url.searchParams.get('after') } };
    });
    const handled: string[] = [];
    const { store, feed } = follower(srv.url, handled);
    const unfollow = feed.follow();
    await until(() => srv.asked.length === 2);
    expect(feed.lastError).toMatch(/refused the test feed: 503 UNAVAILABLE restarting/);
    expect(handled).toEqual([]);
    release();
    await until(() => srv.asked.some((u) => u.searchParams.get('after') === '2'));
    expect(handled).toEqual(['a', 'b']);
    expect(await store.getMeta('test.cursor')).toBe('2');
    expect(srv.asked[0].searchParams.get('wait')).toBe('1');
    expect(feed.lastError).toBeNull();
    unfollow();
    expect(feed.following).toBe(false);
  });

  it('a malformed page fails the round and moves no cursor; a manual pull answers at once (wait 0)', async () => {
    const srv = await feedServer(() => ({ status: 200, body: { items: [1], nextCursor: '9' } }));
    const handled: string[] = [];
    const { store, feed } = follower(srv.url, handled);
    await expect(feed.pull()).rejects.toMatchObject({
      code: 'PLANE_ERROR',
      message: expect.stringMatching(/malformed test feed page: items\.0/),
    });
    expect(handled).toEqual([]);
    expect(await store.getMeta('test.cursor')).toBeNull();
    expect(srv.asked[0].searchParams.get('wait')).toBe('0');
  });

  it('stop() ends a held request at once, closes the connection, and no round is asked after it', async () => {
    const srv = await feedServer(() => null);
    // a request timeout far past the test's: only the abort can end the held request in time
    const { http, feed } = follower(srv.url, [], { timeoutMs: 600_000 });
    feed.follow();
    await until(() => srv.asked.length === 1);
    await feed.stop();
    expect(feed.following).toBe(false);
    expect(http.closed).toBe(true);
    expect(feed.follow()).toBeTypeOf('function');
    // a round started after stop() would have reached the server by the next turn of the loop
    await new Promise((r) => setImmediate(r));
    expect(srv.asked).toHaveLength(1);
  });

  it('the last follower leaving and one coming back aborts the held round without counting it a failure: no error, the next round asked at once', async () => {
    const srv = await feedServer(() => null);
    const { feed } = follower(srv.url, [], { timeoutMs: 600_000 });
    const first = feed.follow();
    await until(() => srv.asked.length === 1);
    first();
    feed.follow();
    await until(() => srv.asked.length === 2);
    expect(feed.lastError).toBeNull();
    expect(feed.following).toBe(true);
  });
});
