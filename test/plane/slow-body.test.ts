/**
 * Request bodies that stall or vanish, over real sockets to a real plane on
 * PGlite: they cannot lock anyone out of ingest, the plane closes them after
 * its body deadline, and a client that hangs up is logged as such (not as a
 * database outage).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { createKey } from '../../plane/auth.js';
import { loadConfig, type PlaneConfig } from '../../plane/config.js';
import { startPlane, type RunningPlane } from '../../plane/server.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { call, openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

interface Stalled {
  socket: Socket;
  /** Everything the plane sent back. */
  answer: string;
  opened: number;
  closed: Promise<number>;
}

/** Headers, a Content-Length of 1,000,000 and the first 14 bytes of a body that never comes. */
function stall(port: number, key: string): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const s: Stalled = {
      socket,
      answer: '',
      opened: 0,
      closed: new Promise((r) => socket.once('close', () => r(performance.now()))),
    };
    socket.on('data', (d) => (s.answer += d.toString()));
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(
        `POST /v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"protocol":1,`,
        () => {
          s.opened = performance.now();
          resolve(s);
        },
      );
    });
  });
}

describe('slow and vanishing request bodies', () => {
  let plane: RunningPlane | null = null;
  let database: PlaneDatabase | null = null;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await plane?.close();
    await database?.close();
    plane = database = null;
  });

  const start = async (over: Partial<PlaneConfig>, logger = pino({ level: 'silent' })) => {
    database = await openTestPlaneDatabase('pglite');
    plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://', ...over }), {
      database,
      logger,
    });
    return { plane, db: database.db };
  };

  it('slow-body lockout defect: 32 stalled uploads hold no ingest slot, a real batch is answered at once, and the plane closes them after the idle deadline with 408', async () => {
    // long next to one batch on a loaded machine (one took 5.8 s against a 3 s deadline): the proof below is that
    // the batch was answered while the stalled uploads were still open, i.e. before their deadline
    const idleMs = 15_000;
    const { plane, db } = await start({
      maxInflightIngest: 16,
      maxQueuedIngest: 64,
      ingestQueueWaitMs: 30_000,
      bodyIdleMs: idleMs,
    });
    const hostile = (await createKey(db, { createProject: true, project: 'p', scopes: ['ingest'] })).key;
    const key = (await createKey(db, { createProject: true, project: 'p', scopes: ['ingest', 'read'] })).key;
    const rows = await eventsOf(async (s) => void (await s.put(step('after-stall', 0))), 'w-good');

    const stalled = await Promise.all(Array.from({ length: 32 }, () => stall(plane.port, hostile)));
    sockets.push(...stalled.map((s) => s.socket));
    await new Promise((r) => setTimeout(r, 300)); // every stalled request is past auth and reading its body

    const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w-good', rows } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ accepted: 1 });
    // before the fix it waited for a slot the stalled uploads held, until their idle deadline freed them (or the 30 s
    // gate wait, 429): answered while every stalled upload is still open and unanswered, it did not wait for them.
    // An order of events, not a number of ms
    expect(
      stalled.every((s) => !s.socket.destroyed && s.answer === ''),
      'the stalled uploads were still open when the batch was answered',
    ).toBe(true);

    const closedAt = await Promise.all(stalled.map((s) => s.closed));
    stalled.forEach((s, i) => {
      expect(s.answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.answer).toContain('BODY_TIMEOUT');
      expect(closedAt[i] - s.opened).toBeGreaterThanOrEqual(idleMs - 100);
      expect(closedAt[i] - s.opened).toBeLessThan(idleMs + 15_000);
    });
    expect((await call(`${plane.url}/v1/executions/after-stall`, { key })).status).toBe(200);
  }, 150_000);

  it('a trickling body is cut at the total deadline with 408, however often bytes arrive', async () => {
    const { plane, db } = await start({ bodyIdleMs: 1000, bodyTotalMs: 2000 });
    const key = (await createKey(db, { createProject: true, project: 'p', scopes: ['ingest'] })).key;
    const s = await stall(plane.port, key);
    sockets.push(s.socket);
    const drip = setInterval(() => s.socket.writable && s.socket.write(' '), 200);
    try {
      const closed = await s.closed;
      expect(s.answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.answer).toContain('not complete within 2000 ms');
      expect(closed - s.opened).toBeGreaterThanOrEqual(1900);
    } finally {
      clearInterval(drip);
    }
  }, 60_000);

  it('client abort defect: a client that hangs up mid-body is logged as "client aborted" at info, never as "database unavailable"', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const { plane, db } = await start({}, logger);
    const key = (await createKey(db, { createProject: true, project: 'p', scopes: ['ingest'] })).key;
    const s = await stall(plane.port, key);
    await new Promise((r) => setTimeout(r, 300));
    s.socket.destroy();
    const deadline = Date.now() + 20_000;
    while (!lines.some((l) => l.msg === 'client aborted') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(lines.filter((l) => l.msg === 'client aborted').map((l) => l.level)).toEqual([30]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  }, 60_000);
});
