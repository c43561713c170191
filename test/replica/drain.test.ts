import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { FaultProxy, type Fault } from '../helpers/fault-proxy.js';
import pino from 'pino';
import { createKey } from '../../plane/auth.js';
import { startPlane } from '../../plane/server.js';
import { loadConfig } from '../../plane/config.js';
import { call, openTestPlaneDatabase, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-drain-');
let plane: TestPlane;
let key = '';
let readKey = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('drain', ['ingest']);
  readKey = await plane.key('drain', ['read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

let n = 0;
async function planeRowIds(executionId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await call(
      `${plane.url}/v1/executions/${executionId}/rows?limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
      { key: readKey },
    );
    if (r.status === 404) return ids;
    ids.push(...r.body.items.map((x: { id: string }) => x.id));
    cursor = r.body.nextCursor;
  } while (cursor);
  return ids;
}

async function until(cond: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the outbox drain against a real plane', () => {
  let store: SqliteCheckpointer;
  let proxy: FaultProxy;
  let replica: Replica | null = null;
  let exec = '';
  beforeEach(async () => {
    store = new SqliteCheckpointer({ path: tmp.file(`d${++n}.db`), synchronous: 'NORMAL' });
    proxy = await new FaultProxy(plane.url).start();
    exec = `drain-${n}`;
  });
  afterEach(async () => {
    await replica?.stop();
    replica = null;
    await proxy.close();
    await store.close();
  });
  const connect = (o: Partial<Parameters<typeof connectPlane>[1]> = {}) =>
    // the drain alone: the proxy's rules pick requests by order, and the change feed's long poll would be one of them
    (replica = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      backoffBaseMs: 20,
      backoffCapMs: 200,
      timeoutMs: 2000,
      followChanges: false,
      ...o,
    }));
  const write = async (count: number, from = 0) => {
    const ids: string[] = [];
    for (let i = from; i < from + count; i++) ids.push((await store.put(step(exec, i))).id);
    return ids;
  };

  it('disconnected, rows wait and nothing leaves; connected, they drain once', async () => {
    const ids = await write(5);
    await new Promise((r) => setTimeout(r, 100));
    expect(proxy.seen.length).toBe(0);
    expect((await store.outboxStats()).pendingCount).toBe(5);
    const r = connect();
    const s = await r.flush({ timeoutMs: 10_000 });
    expect(s).toMatchObject({ state: 'idle', pendingRows: 0, quarantinedCount: 0, lastError: null, rowsSynced: 5 });
    expect(s.lastAckAt).not.toBeNull();
    expect(await planeRowIds(exec)).toEqual(ids);
  });

  it('a write kicks the drain (no poll); a kick during a round is not lost; the last row is never left behind', async () => {
    const r = connect();
    proxy.rule = ({ path }) => (path === '/v1/ingest' && proxy.seen.length === 0 ? 'trickle' : undefined);
    const first = await write(3);
    await until(() => proxy.seen.length >= 1);
    const more = await write(2, 3);
    await until(async () => (await store.outboxStats()).pendingCount === 0);
    expect(await planeRowIds(exec)).toEqual([...first, ...more]);
    expect((await r.status()).state).toBe('idle');
  });

  const faults: [string, Fault[], RegExp | null][] = [
    ['connection reset', ['reset', 'reset'], /network/],
    ['500', [{ status: 500 }, { status: 502 }], /^50\d/],
    ['hang past the timeout', ['hang'], /network|timeout/i],
    ['response lost after the plane committed', ['drop-after-commit'], /network/],
    ['truncated response', ['truncate'], /network|terminated|closed|abort|other side/i],
    ['slow trickle', ['trickle'], null],
  ];
  for (const [name, queue, err] of faults) {
    it(`converges after ${name}: every row on the plane exactly once`, async () => {
      const ids = await write(20);
      proxy.queue = [...queue];
      const r = connect({ timeoutMs: 500 });
      let sawBackoff = false;
      r.on('state', (s) => (sawBackoff ||= s === 'backoff'));
      const s = await r.flush({ timeoutMs: 15_000 });
      expect(s.pendingRows).toBe(0);
      expect(await planeRowIds(exec)).toEqual(ids);
      if (err) {
        expect(sawBackoff).toBe(true);
        expect(s.lastError ?? '').toMatch(err);
      }
      const w = (await call(`${plane.url}/v1/writers`, { key: readKey })).body.items;
      expect(w.find((x: { writerId: string }) => x.writerId === store.writerId)).toBeDefined();
    });
  }

  it('waits at least Retry-After on 429 and 503', async () => {
    await write(3);
    proxy.queue = [
      { status: 429, retryAfter: '1' },
      { status: 503, retryAfter: '1' },
    ];
    const r = connect();
    const t0 = Date.now();
    const s = await r.flush({ timeoutMs: 10_000 });
    expect(s.pendingRows).toBe(0);
    const times = proxy.seen.map((x) => x.at);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(950);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(950);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
  });

  it('401/403 stop the drain in auth_failed, quarantine nothing, and resume when the key is replaced', async () => {
    const ids = await write(4);
    const r = connect({ apiKey: 'wm_bad' });
    await until(async () => (await r.status()).state === 'auth_failed');
    const s = await r.status();
    expect(s).toMatchObject({ state: 'auth_failed', pendingRows: 4, quarantinedCount: 0 });
    expect(s.lastError).toMatch(/^401/);
    const before = proxy.seen.length;
    await write(1, 4);
    await new Promise((res) => setTimeout(res, 100));
    expect(proxy.seen.length).toBe(before);
    r.setApiKey(readKey);
    await until(async () => (await r.status()).state === 'auth_failed' && proxy.seen.length > before);
    expect((await r.status()).lastError).toMatch(/^403/);
    r.setApiKey(key);
    expect((await r.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    expect((await planeRowIds(exec)).length).toBe(ids.length + 1);
  });

  it('413 halves the batch; a single row still too large is quarantined', async () => {
    const ids = await write(16);
    const big = ids[5];
    proxy.rule = ({ path, ids: sent }) =>
      path === '/v1/ingest' && (sent.length > 4 || sent.includes(big)) ? { status: 413 } : undefined;
    const r = connect();
    const s = await r.flush({ timeoutMs: 10_000 });
    expect(s).toMatchObject({ pendingRows: 0, quarantinedCount: 1 });
    expect(s.lastQuarantineReason).toMatch(/413/);
    expect(await planeRowIds(exec)).toEqual(ids.filter((i) => i !== big));
    expect((await store.listQuarantined()).map((q) => q.id)).toEqual([big]);
  });

  it('regression: a request-level 400 (a proxy speaking another protocol) quarantined the whole outbox', async () => {
    const ids = await write(20);
    const nginx =
      '<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head><body>nginx</body></html>';
    proxy.rule = ({ path }) => (path === '/v1/ingest' ? { status: 400, html: nginx } : undefined);
    const r = connect();
    await until(async () => proxy.seen.length >= 3 && (await r.status()).state === 'backoff');
    const s = await r.status();
    expect(s).toMatchObject({ pendingRows: 20, quarantinedCount: 0 });
    expect(s.lastError).toMatch(
      /^400: HTTP 400 \(not from the plane: "400 The plain HTTP request was sent to HTTPS port nginx"\)/,
    );
    expect(s.lastErrorAt).not.toBeNull();
    expect(await store.listQuarantined()).toEqual([]);
    proxy.rule = null;
    const healed = await r.flush({ timeoutMs: 10_000 });
    expect(healed).toMatchObject({ pendingRows: 0, quarantinedCount: 0, sent: 20 });
    expect(healed.lastSuccessAt! >= healed.lastErrorAt!).toBe(true);
    expect(await planeRowIds(exec)).toEqual(ids);
  });

  it("per-row refusals in a 200 are what is quarantined, with the plane's reason", async () => {
    const ids = await write(4);
    const victim = (await store.fetchUnsynced({ limit: 10, maxBytes: 1e12 })).find((e) => e.id === ids[2])!;
    const forged = structuredClone(victim.event!) as { row: { nodeId: string } };
    forged.row.nodeId = 'forged';
    expect(
      (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'forger', rows: [forged] } })).body
        .accepted,
    ).toBe(1);
    const s = await connect().flush({ timeoutMs: 10_000 });
    expect(s).toMatchObject({ pendingRows: 0, quarantinedCount: 1 });
    expect((await store.listQuarantined()).map((q) => q.id)).toEqual([ids[2]]);
    expect(s.lastQuarantineReason).toMatch(/plane: conflict/);
  });

  it('regression: a state listener that throws stopped the drain for good', async () => {
    const ids = await write(5);
    proxy.queue = [{ status: 500 }, 'reset'];
    const r = connect();
    const isolated: string[] = [];
    r.on('listener_error', ({ event }: { event: string }) => isolated.push(event));
    r.on('state', (state: string) => {
      throw new Error(`listener broke on ${state}`);
    });
    // no flush(): the drain's own retry timer must carry the rows through
    await until(async () => (await store.outboxStats()).pendingCount === 0);
    expect(await planeRowIds(exec)).toEqual(ids);
    expect(isolated).toContain('state');
    expect((await r.status()).state).toBe('idle');
  });

  it('errors carry their time; a successful round records lastSuccessAt after them', async () => {
    await write(3);
    proxy.queue = ['reset'];
    const r = connect();
    await until(() => proxy.seen.length >= 1);
    const s = await r.flush({ timeoutMs: 10_000 });
    expect(s.pendingRows).toBe(0);
    expect(s.lastError).toMatch(/network/);
    expect(Date.parse(s.lastErrorAt!)).toBeGreaterThan(0);
    expect(Date.parse(s.lastSuccessAt!)).toBeGreaterThanOrEqual(Date.parse(s.lastErrorAt!));
  });

  it('a poison row among 10,000: 9,999 synced, 1 quarantined with the plane reason, the drain never stalls', async () => {
    const ids = await write(10_000);
    const victim = (await store.fetchUnsynced({ limit: 10_000, maxBytes: 1e12 })).find((e) => e.id === ids[4321])!;
    const forged = structuredClone(victim.event!) as { row: { nodeId: string } };
    forged.row.nodeId = 'forged';
    expect(
      (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'forger', rows: [forged] } })).body
        .accepted,
    ).toBe(1);
    const r = connect();
    const s = await r.flush({ timeoutMs: 60_000 });
    expect(s).toMatchObject({ pendingRows: 0, quarantinedCount: 1 });
    expect(s.lastQuarantineReason).toMatch(/plane: conflict/);
    const onPlane = await planeRowIds(exec);
    expect(onPlane.length).toBe(10_000);
    expect(new Set(onPlane).size).toBe(10_000);
    expect((await store.listQuarantined()).map((q) => q.id)).toEqual([ids[4321]]);
  }, 120_000);

  it('stop() leaves no timers or sockets behind', async () => {
    await write(3);
    proxy.rule = () => ({ status: 500 });
    const r = connect({ pollMs: 1000, backoffBaseMs: 5000, backoffCapMs: 5000, followChanges: true });
    await until(async () => (await r.status()).state === 'backoff');
    expect(r.handles).toEqual({
      retryTimer: true,
      pollTimer: true,
      roundInFlight: false,
      socketsOpen: true,
      followingChanges: true,
    });
    expect(proxy.sockets.size).toBeGreaterThan(0);
    await r.stop();
    replica = null;
    expect(r.handles).toEqual({
      retryTimer: false,
      pollTimer: false,
      roundInFlight: false,
      socketsOpen: false,
      followingChanges: false,
    });
    // the plane side sees every connection from this replica closed
    await until(() => proxy.sockets.size === 0, 5000);
    expect((await r.status()).state).toBe('stopped');
  });
});

describe('regression: flush() during a backoff did not send though the plane was back', () => {
  it('a real plane goes down and comes back: flush() ends the backoff at once, drains, and says what it did', async () => {
    const database = await openTestPlaneDatabase('pglite');
    const config = (port: number) => loadConfig({}, { host: '127.0.0.1', port, dataDir: 'memory://' });
    const logger = pino({ level: 'silent' });
    let running = await startPlane(config(0), { database, logger });
    const apiKey = (await createKey(database.db, { createProject: true, project: 'flush', scopes: ['ingest'] })).key;
    const store = new SqliteCheckpointer({ path: tmp.file('flush-backoff.db') });
    // a backoff of up to 5 minutes (full jitter): the one the test catches has more than half a minute left
    const r = connectPlane(store, {
      url: running.url,
      apiKey,
      pollMs: 0,
      debounceMs: 5,
      backoffBaseMs: 300_000,
      backoffCapMs: 300_000,
      timeoutMs: 2000,
    });
    try {
      await running.close();
      for (let i = 0; i < 40; i++) await store.put(step('flush-backoff', i));
      // a backoff with half a minute still to run (full jitter may pick a short one: then it retries, fails, and picks again)
      await until(async () => {
        const s = await r.status();
        return s.state === 'backoff' && Date.parse(s.nextAttemptAt!) - Date.now() > 30_000;
      }, 150_000);
      for (let i = 40; i < 50; i++) await store.put(step('flush-backoff', i));
      const waiting = await r.status();
      expect(waiting.state).toBe('backoff');
      running = await startPlane(config(running.port), { database, logger });
      // a flush that waited for the backoff would still be waiting at its own timeout (20 s, under the 30 s left):
      // drained within it, and before the backoff's next attempt, it ended the backoff (no bound on how fast)
      const f = await r.flush({ timeoutMs: 20_000 });
      expect(f).toMatchObject({ state: 'idle', pendingRows: 0, sent: 50 });
      expect(f.rounds).toBeGreaterThanOrEqual(1);
      expect(
        Date.parse(f.lastSuccessAt!),
        `drained at ${f.lastSuccessAt}, the backoff ran to ${waiting.nextAttemptAt}`,
      ).toBeLessThan(Date.parse(waiting.nextAttemptAt!));
      expect(Date.parse(f.lastSuccessAt!)).toBeGreaterThan(Date.parse(f.lastErrorAt!));
    } finally {
      await r.stop();
      await store.close();
      await running.close();
      await database.close();
    }
  }, 240_000);

  it('flush() in auth_failed or stopped returns at once without a request', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    await store.put(step('flush-stopped', 0));
    const proxy = await new FaultProxy(plane.url).start();
    const r = connectPlane(store, { url: proxy.url, apiKey: 'wm_revoked', pollMs: 0, debounceMs: 5, timeoutMs: 2000 });
    try {
      await until(async () => (await r.status()).state === 'auth_failed');
      const seen = proxy.seen.length;
      const t0 = Date.now();
      // a flush that waited would answer the same at its timeout: "at once" is judged against that timeout, with a
      // wide margin (half of 60 s), not against a number of ms a loaded machine might exceed
      const timeoutMs = 60_000;
      const f = await r.flush({ timeoutMs });
      expect(f).toMatchObject({ state: 'auth_failed', sent: 0, rounds: 0, pendingRows: 1 });
      expect(Date.now() - t0, 'flush() waited for its timeout').toBeLessThan(timeoutMs / 2);
      expect(proxy.seen.length).toBe(seen);
    } finally {
      await r.stop();
      await proxy.close();
      await store.close();
    }
  });
});

describe('regression: flush() with an unreachable plane exited the process (code 13)', () => {
  it('an awaited flush keeps the process alive until its timeout, then resolves with the backlog', async () => {
    const { runTs } = await import('../helpers/child.js');
    const { fileURLToPath } = await import('node:url');
    const r = await runTs(fileURLToPath(new URL('./flush-alive-child.ts', import.meta.url)));
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim());
    expect(out).toMatchObject({ done: true, pendingRows: 1 });
    expect(out.lastError).toMatch(/network/);
  });
});
