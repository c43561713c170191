/**
 * The inspector's forms read their body within a size and a deadline, as the
 * plane's JSON routes do: the sign-in form needs no key, so a body read with no
 * cap (Hono's parseBody) let one request make the plane hold gigabytes, and a
 * stalled one wait for Node's whole-request timeout. Over real sockets to a
 * real plane on PGlite and to `waymark ui`'s app on a SQLite file.
 */
import { connect } from 'node:net';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi } from '../../client/ui/serve.js';
import { createKey } from '../../plane/auth.js';
import { loadConfig } from '../../plane/config.js';
import { startPlane } from '../../plane/server.js';
import { LIMITS } from '../../shared/limits.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { pause } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-form-bodies-');
afterAll(() => tmp.cleanup());

/** A form body of `bytes` bytes sent chunked (no Content-Length to refuse it by), 64 KiB at a time. */
function chunkedForm(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode('a'.repeat(64 * 1024));
  let sent = 0;
  return new ReadableStream({
    pull(ctl) {
      if (sent === 0) ctl.enqueue(new TextEncoder().encode('key='));
      if (sent >= bytes) return ctl.close();
      sent += chunk.byteLength;
      ctl.enqueue(chunk);
    },
  });
}

const post = (url: string, body: BodyInit, type = 'application/x-www-form-urlencoded') =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': type, origin: new URL(url).origin },
    body,
    redirect: 'manual',
    duplex: 'half',
  } as RequestInit);

/** Headers and 10 bytes of a 1,000-byte form body that never comes; the answer's status line and when the socket closed. */
function stalled(url: string): Promise<{ answer: string; ms: number }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const s = connect(Number(u.port), u.hostname, () => {
      s.write(
        `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nkey=aaaaaa`,
      );
    });
    let answer = '';
    s.on('data', (d) => (answer += d));
    s.once('close', () => resolve({ answer, ms: performance.now() - t }));
    s.once('error', reject);
  });
}

describe('inspector form bodies', () => {
  it("the plane's sign-in form (no key needed): a body over the control limit is 413 once it passes it, a declared one at once, another type 415, a stalled one 408 at the body deadline; a real sign-in still works", async () => {
    const database = await openTestPlaneDatabase('pglite');
    const plane = await startPlane(
      loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://', bodyIdleMs: 1000, bodyTotalMs: 3000 }),
      { database, logger: pino({ level: 'silent' }) },
    );
    try {
      const login = `${plane.url}/login`;
      // 64 MiB offered, chunked: refused at the limit, the rest never read
      const big = await post(login, chunkedForm(64 * 1024 * 1024));
      expect([big.status, await big.text()]).toEqual([
        413,
        `TOO_LARGE: a form is at most ${LIMITS.controlBodyBytes} bytes`,
      ]);
      const declared = await post(login, 'a'.repeat(LIMITS.controlBodyBytes + 1));
      expect(declared.status).toBe(413);
      const json = await post(login, '{"key":"x"}', 'application/json');
      expect([json.status, await json.text()]).toEqual([415, expect.stringContaining('UNSUPPORTED_MEDIA_TYPE')]);
      const s = await stalled(login);
      expect(s.answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.answer).toContain('BODY_TIMEOUT: no request body bytes for 1000 ms');
      // answered at the body deadline (1 s idle), not at Node's request timeout (minutes)
      expect(s.ms).toBeLessThan(30_000);
      // at the limit: read, and judged as a sign-in (a wrong key), not refused for its size
      const atLimit = await post(login, `key=${'a'.repeat(LIMITS.controlBodyBytes - 4)}`);
      expect(atLimit.status).toBe(401);
      // an unknown key and a key without the inspector's scopes are told apart
      expect(await atLimit.text()).toContain('That key is unknown or revoked');
      const ingestOnly = (await createKey(database.db, { createProject: true, project: 'p', scopes: ['ingest'] })).key;
      const noScope = await post(login, new URLSearchParams({ key: ingestOnly, next: '/' }).toString());
      expect([noScope.status, await noScope.text()]).toEqual([
        401,
        expect.stringContaining('it needs the read or the approve scope'),
      ]);
      const { key } = await createKey(database.db, { createProject: true, project: 'p', scopes: ['read'] });
      const ok = await post(login, new URLSearchParams({ key, next: '/' }).toString());
      expect([ok.status, ok.headers.get('location')]).toEqual([303, '/']);
    } finally {
      await plane.close();
      await database.close();
    }
  }, 120_000);

  it("waymark ui's decision form: a body over the control limit is 413 and records nothing", async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('ui.db') });
    const ui = await serveLocalUi(store, { port: 0 });
    try {
      const p = await store.recordInterrupt(pause('paused'), { reason: 'approve', context: null });
      const r = await post(`${ui.url}/runs/paused/decision`, chunkedForm(8 * 1024 * 1024));
      expect(r.status).toBe(413);
      expect(await store.getDecision('paused', p.checkpoint.id)).toBeNull();
    } finally {
      await ui.close();
      await store.close();
    }
  }, 60_000);
});
