/**
 * Clients that stall against the plane, over raw sockets on 127.0.0.1: fifty
 * at once that send headers and then stall mid-body (or mid-headers) on every
 * kind of route, against the real `bin/waymark.mjs`, and a client that asks
 * for a large answer and never reads it. The plane must answer each with its
 * documented status and close it at its own deadline, and serve everyone
 * else meanwhile.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { connectPlane, restoreFromPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createKey } from '../../plane/auth.js';
import { loadConfig } from '../../plane/config.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { PAGE_BYTES } from '../../plane/reads/rows.js';
import { connectionIdleMs, startPlane, type RunningPlane } from '../../plane/server.js';
import { LIMITS } from '../../shared/limits.js';
import { call, openTestPlaneDatabase } from '../helpers/plane.js';
import { startPlaneProcess, type PlaneProcess } from '../helpers/plane-process.js';
import { eventsOf, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-stalled-clients-');
afterAll(() => tmp.cleanup());

interface Stalled {
  kind: string;
  socket: Socket;
  /** Everything the plane sent back. */
  answer: string;
  closed: boolean;
  closedAt: Promise<number>;
}

/** Open a connection, send `text`, and send nothing more. */
function stall(port: number, kind: string, text: string): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const s: Stalled = {
      kind,
      socket,
      answer: '',
      closed: false,
      closedAt: new Promise((r) =>
        socket.once('close', () => {
          s.closed = true;
          r(performance.now());
        }),
      ),
    };
    socket.on('data', (d) => (s.answer += d.toString('latin1')));
    socket.once('error', reject);
    socket.once('connect', () => {
      // a reset by the plane is one way it closes a stalled connection
      socket.off('error', reject);
      socket.on('error', () => {});
      socket.write(text, () => resolve(s));
    });
  });
}

const head = (line: string, headers: string[]) =>
  `${line}\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

describe('stalled uploads against the real plane binary', () => {
  let plane: PlaneProcess | null = null;
  const sockets: Socket[] = [];
  const stores: SqliteCheckpointer[] = [];
  let replica: Replica | null = null;
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await replica?.stop();
    replica = null;
    for (const s of stores.splice(0)) await s.close();
    await plane?.stop();
    plane = null;
  });

  it('fifty connections stalled mid-body or mid-headers on every kind of route hold nothing: a drain and a restore are served meanwhile, and each stalled one is answered 408 and closed at its deadline', async () => {
    // generous next to a drain round and a restore on a loaded machine: the proof is the order of events, not a number
    const idleMs = 10_000;
    const headersMs = 10_000;
    const totalMs = 20_000;
    plane = await startPlaneProcess(['--data-dir', 'memory://'], {
      env: {
        WAYMARK_BODY_IDLE_MS: String(idleMs),
        WAYMARK_BODY_TOTAL_MS: String(totalMs),
        WAYMARK_HEADERS_TIMEOUT_MS: String(headersMs),
      },
    });
    const key = /shown this once and written nowhere: (wm_\S+)/.exec(plane.stdout())?.[1];
    expect(key, plane.stdout()).toBeDefined();
    const port = Number(new URL(plane.url).port);
    const auth = `Authorization: Bearer ${key}`;

    const kinds: [string, number, string][] = [
      [
        'ingest',
        20,
        head('POST /v1/ingest HTTP/1.1', [auth, 'Content-Type: application/json', 'Content-Length: 1000000']) +
          '{"protocol":1,',
      ],
      [
        'ingest-chunked',
        10,
        head('POST /v1/ingest HTTP/1.1', [auth, 'Content-Type: application/json', 'Transfer-Encoding: chunked']) +
          'e\r\n{"protocol":1,\r\n',
      ],
      [
        'claim',
        10,
        head('POST /v1/executions/nowhere/claim HTTP/1.1', [
          auth,
          'Content-Type: application/json',
          'Content-Length: 400',
        ]) + '{"checkpointId":',
      ],
      ['headers', 5, `POST /v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\nContent-Ty`],
      [
        'login-form',
        5,
        head('POST /login HTTP/1.1', [
          'Content-Type: application/x-www-form-urlencoded',
          'Origin: null',
          'Content-Length: 400',
        ]) + 'key=wm_',
      ],
    ];
    const stalled = await Promise.all(
      kinds.flatMap(([kind, count, text]) => Array.from({ length: count }, () => stall(port, kind, text))),
    );
    sockets.push(...stalled.map((s) => s.socket));
    expect(stalled.length).toBe(50);
    await new Promise((r) => setTimeout(r, 300)); // past auth, waiting on their bodies

    // a normal client, meanwhile: its drain round, a restore on another machine, a read
    const a = new SqliteCheckpointer({ path: tmp.file('a.db'), writerId: 'normal-a' });
    const b = new SqliteCheckpointer({ path: tmp.file('b.db'), writerId: 'normal-b' });
    stores.push(a, b);
    for (let i = 0; i < 20; i++) await a.put(step('served', i));
    replica = connectPlane(a, { url: plane.url, apiKey: key!, pollMs: 0, followChanges: false });
    expect(await replica.flush({ timeoutMs: 60_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    expect(await restoreFromPlane(b, 'served', { url: plane.url, apiKey: key! })).toMatchObject({
      inserted: 20,
      totalRows: 20,
    });
    expect((await call(`${plane.url}/healthz`)).status).toBe(200);
    const stillOpen = stalled.filter((s) => !s.closed && s.answer === '').length;
    expect(stillOpen, 'every stalled connection was still open and unanswered when the normal client was done').toBe(
      50,
    );

    await Promise.all(stalled.map((s) => s.closedAt));
    for (const s of stalled) {
      expect(s.answer, s.kind).toMatch(/^HTTP\/1\.1 408 /);
      // a body read by the plane's own deadline says so (in JSON, or as text to a form) and closes; stalled headers are Node's backstop
      if (['ingest', 'ingest-chunked', 'claim', 'login-form'].includes(s.kind)) {
        expect(s.answer, s.kind).toContain('BODY_TIMEOUT');
        expect(s.answer.toLowerCase(), s.kind).toContain('connection: close');
      }
    }
    // and it still serves
    await a.put(step('served', 20));
    expect(await replica.flush({ timeoutMs: 60_000 })).toMatchObject({ pendingRows: 0 });
    expect((await call(`${plane.url}/v1/executions/served`, { key })).body.execution).toMatchObject({ rowCount: 21 });
  }, 300_000);
});

describe('a client that never reads its answer', () => {
  let plane: RunningPlane | null = null;
  let database: PlaneDatabase | null = null;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await plane?.close();
    await database?.close();
    plane = database = null;
  });

  it('a large restore page asked for and never read is dropped once its connection makes no progress, and the plane serves others meanwhile; long polls that hold longer than that deadline are answered', async () => {
    const config = loadConfig(
      {},
      {
        host: '127.0.0.1',
        port: 0,
        dataDir: 'memory://',
        bodyIdleMs: 1000,
        bodyTotalMs: 2000,
        headersTimeoutMs: 1000,
        ingestQueueWaitMs: 1000,
      },
    );
    database = await openTestPlaneDatabase('pglite');
    plane = await startPlane(config, { database, logger: pino({ level: 'silent' }) });
    const key = (await createKey(database.db, { createProject: true, project: 'p', scopes: ['ingest', 'read'] })).key;
    // 24 rows of ~500 KB: an answer far larger than the socket buffers between the two ends
    const rows = await eventsOf(async (s) => {
      for (let i = 0; i < 24; i++)
        await s.put(step('large', i, { nodeOutput: randomBytes(360_000).toString('base64') }));
      await s.put(step('small', 0));
    });
    for (let i = 0; i < rows.length; i += 4) {
      expect(
        (
          await call(`${plane.url}/v1/ingest`, {
            key,
            json: { protocol: 1, writerId: 'w', rows: rows.slice(i, i + 4) },
          })
        ).status,
      ).toBe(200);
    }

    // a first, small request on the connection (a kept-alive connection gets its idle deadline back for the next one)
    const s = await stall(plane.port, 'reader', head('GET /healthz HTTP/1.1', []));
    sockets.push(s.socket);
    while (!s.answer.endsWith('{"ok":true}')) await new Promise((r) => setTimeout(r, 10));
    // then the large answer: it takes the first bytes, then reads no more
    s.socket.write(head('GET /v1/executions/large/restore?limit=24 HTTP/1.1', [`Authorization: Bearer ${key}`]));
    while (!/\r\n\r\n\{"ok":true\}HTTP\/1\.1 200 /.test(s.answer))
      await new Promise<void>((r) => s.socket.once('data', () => r()));
    s.socket.pause();

    // meanwhile others are served
    expect((await call(`${plane.url}/healthz`)).status).toBe(200);
    const other = new SqliteCheckpointer({ path: tmp.file('other.db') });
    try {
      expect(await restoreFromPlane(other, 'small', { url: plane.url, apiKey: key })).toMatchObject({ inserted: 1 });
    } finally {
      await other.close();
    }
    expect(s.closed).toBe(false);

    // the plane lets go of it: a connection that makes no progress either way is closed after the plane's idle
    // deadline (Node tells a stuck write from a slow one at the next tick of it, so within twice that), never held
    // for as long as the client likes. A paused socket cannot see its peer close, so the client reads again only
    // once that has passed: it gets what was already in flight, then the end, never the whole answer
    const idleMs = connectionIdleMs(config);
    expect(idleMs).toBe(9000);
    // meanwhile three long polls hold for longer than that deadline, idle by design: each is answered after its
    // hold with an empty page, its connection never taken for a stalled one
    const holdS = Math.ceil((2 * idleMs) / 1000);
    const polls = ['/v1/changes?after=999999', '/v1/writer-changes?writerId=w&after=999999', '/v1/decisions'].map(
      async (path) => {
        const started = performance.now();
        const r = await call(`${plane!.url}${path}${path.includes('?') ? '&' : '?'}wait=${holdS}`, { key });
        return { path, status: r.status, items: r.body.items, heldMs: performance.now() - started };
      },
    );
    await new Promise((r) => setTimeout(r, 2 * idleMs + 10_000));
    for (const poll of await Promise.all(polls)) {
      expect(poll, poll.path).toMatchObject({ status: 200, items: [] });
      expect(poll.heldMs, poll.path).toBeGreaterThanOrEqual(holdS * 1000 - 50);
    }
    const answered = s.answer.indexOf('\r\n\r\n', s.answer.indexOf('{"ok":true}')) + 4;
    const declared = Number(
      /content-length: (\d+)/i.exec(s.answer.slice(s.answer.indexOf('{"ok":true}'), answered))?.[1],
    );
    // a page is cut at PAGE_BYTES (8 MiB): as large as a page gets, more than the two ends' socket buffers
    // hold here (their largest, tcp_wmem and tcp_rmem, are 4 and 6 MiB on this machine, and a stalled reader's
    // window does not grow to that)
    expect(declared).toBeGreaterThan(PAGE_BYTES - LIMITS.rowBytes);
    s.socket.resume();
    const outcome = await Promise.race([
      s.closedAt.then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still open'), 60_000)),
    ]);
    expect(outcome).toBe('closed');
    expect(
      Buffer.byteLength(s.answer, 'latin1') - answered,
      'bytes of the answer the client got before the end',
    ).toBeLessThan(declared);
    expect((await call(`${plane.url}/healthz`)).status).toBe(200);
  }, 300_000);
});
