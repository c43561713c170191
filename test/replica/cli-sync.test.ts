import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../client/cli/main.js';
import { localTime, progress } from '../../client/cli/sync-commands.js';
import { connectPlane } from '../../client/replica/connect.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step } from '../helpers/rows.js';
import { readDoc } from '../helpers/docs.js';
import { scratchDir } from '../helpers/tmp.js';
import { waymarkAsync } from '../helpers/plane-process.js';

const tmp = scratchDir('waymark-cli-sync-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('cli', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', () => res()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((res) => srv.close(() => res()));
  return port;
}

async function cli(args: string[]) {
  const lines: string[] = [];
  const code = await main(args, (l) => lines.push(l));
  return { code, text: lines.join('\n') };
}

describe('waymark sync / restore / quarantine', () => {
  it('shows the backlog, drains it with progress, restores a run elsewhere, lists quarantine', async () => {
    const db = tmp.file('a.db');
    const store = new SqliteCheckpointer({ path: db });
    for (let i = 0; i < 30; i++) await store.put(step('cli-run', i));
    await store.recordInterrupt(pause('cli-run', 30), { reason: 'approval', context: { amount: 9 } });
    await store.putIdempotent('cli-run', 'charge', { ok: true });
    await store.close();

    const before = await cli(['sync', 'status', '--db', db]);
    expect(before.text).toMatch(/backlog:\s+33 rows/);
    expect(before.text).toMatch(/last drain:\s+never connected/);
    expect(before.text).toMatch(
      /plane copy:\s+nothing sent yet \(no plane connected; the backlog is kept until one is\)/,
    );

    expect((await cli(['sync', 'now', '--db', db])).code).toBe(2);
    const now = await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key]);
    expect(now.code, now.text).toBe(0);
    expect(now.text).toMatch(/synced 33 rows; 0 waiting; 0 quarantined/);

    const after = await cli(['sync', 'status', '--db', db]);
    expect(after.text).toMatch(/backlog:\s+0 rows/);
    expect(after.text).toMatch(/last ack:\s+\d{4}-/);
    expect(after.text).toMatch(/last error:\s+none/);
    expect(after.text).toMatch(/plane copy:\s+complete \(no row refused\)/);

    const other = tmp.file('b.db');
    const r = await cli(['restore', 'cli-run', '--db', other, '--plane', plane.url, '--key', key]);
    expect(r.code, r.text).toBe(0);
    expect(r.text).toMatch(/restored cli-run: 31 rows written, 0 already here; pause restored; 1 idempotency entries/);
    const ins = await cli(['inspect', '--db', other, 'cli-run']);
    expect(ins.text).toMatch(/pending interrupt: approval/);
    await expect(cli(['restore', 'nope', '--db', other, '--plane', plane.url, '--key', key])).rejects.toMatchObject({
      code: 'NOT_ON_PLANE',
    });

    expect((await cli(['quarantine', '--db', db])).text).toBe('nothing quarantined');
    const s2 = new SqliteCheckpointer({ path: db });
    const e = await s2.put(step('cli-q', 0));
    await s2.markQuarantined({ [e.id]: 'plane: conflict: test' });
    await s2.close();
    // the time is local wall-clock time with its offset
    expect((await cli(['quarantine', '--db', db])).text).toMatch(
      new RegExp(
        `${e.id}\\s+checkpoint\\s+cli-q\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d\\d:\\d\\d\\s+plane: conflict: test`,
      ),
    );
    const q = JSON.parse((await cli(['quarantine', '--db', db, '--json'])).text) as { id: string; reason: string }[];
    expect(q.map((x) => [x.id, x.reason])).toEqual([[e.id, 'plane: conflict: test']]);
    // the loser of an offline double claim is told its rows were refused by seq, not that the plane has a hole
    const s3 = new SqliteCheckpointer({ path: db });
    const big = await s3.put(step('big-run', 0));
    const branch = await s3.put(step('branch-run', 0));
    await s3.markQuarantined({
      [big.id]: 'plane: too_large: row is 1100000 bytes',
      [branch.id]: 'plane: seq_conflict: execution branch-run already holds seq 0',
    });
    await s3.close();
    const status = (await cli(['sync', 'status', '--db', db])).text;
    expect(status).toMatch(
      /plane copy:\s+INCOMPLETE for 2 run\(s\): cli-q \(1 row refused\), big-run \(1 row refused\)/,
    );
    expect(status).toMatch(
      /refused by seq: 1 run\(s\): branch-run \(1 row refused\); the plane holds other rows at those seqs: another machine's branch/,
    );
    expect(status).not.toMatch(/quarantine list/);
    const st = JSON.parse((await cli(['sync', 'status', '--db', db, '--json'])).text) as {
      writerId: string;
      outbox: { quarantinedCount: number };
    };
    expect(st.outbox.quarantinedCount).toBe(3);
    expect(typeof st.writerId).toBe('string');
  });

  it("delete --local then restore takes the plane's copy back (the GUIDE's way out of a diverged run); a plain delete would have deleted the plane's copy at the next sync", async () => {
    const db = tmp.file('local-del.db');
    const store = new SqliteCheckpointer({ path: db });
    for (let i = 0; i < 3; i++) await store.put(step('del-run', i));
    await store.close();
    expect((await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key])).code).toBe(0);

    const d = await cli(['delete', 'del-run', '--db', db, '--local', '--yes']);
    expect(d.text).toBe(
      "deleted del-run: 3 row(s), 0 open pause(s), 0 idempotency entries; from this store only: a plane's copy stays (waymark restore takes it back)",
    );
    expect((await cli(['sync', 'status', '--db', db])).text).toMatch(/backlog:\s+0 rows/);
    const now = await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key]);
    expect(now.code, now.text).toBe(0);
    const r = await cli(['restore', 'del-run', '--db', db, '--plane', plane.url, '--key', key]);
    expect(r.text).toMatch(/restored del-run: 3 rows written, 0 already here/);

    // without --local the deletion is queued, and the next sync deletes the plane's copy for everyone
    const plain = await cli(['delete', 'del-run', '--db', db, '--yes']);
    expect(plain.text).toContain('a plane holds the run: its copy there is deleted at the next sync of this store');
    // the GUIDE says so of a store that is not connected but synced the run (as this one, by `sync now`), quoting this line
    const readme = readDoc('docs/GUIDE.md').replace(/\s+/g, ' ');
    expect(readme).toContain(
      "A plain delete (`waymark delete <id> --db runs.db --yes`, `deleteExecution(id)`) queues the deletion in the store's outbox, connected or not",
    );
    expect(plain.text).toContain(/the command says so \(`([^`]+)`\)/.exec(readme)?.[1] ?? 'the GUIDE quotes the line');
    expect((await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key])).code).toBe(0);
    await expect(cli(['restore', 'del-run', '--db', db, '--plane', plane.url, '--key', key])).rejects.toMatchObject({
      code: 'NOT_ON_PLANE',
    });
  });

  it('regression: sync status showed a cleared error as current, with no time', async () => {
    const db = tmp.file('stale-error.db');
    const store = new SqliteCheckpointer({ path: db });
    for (let i = 0; i < 3; i++) await store.put(step('stale-error', i));
    const proxy = await new FaultProxy(plane.url).start();
    proxy.queue = ['reset'];
    // the drain alone: the proxy's queued fault is for the first request, which the change feed's poll could be
    const r = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      backoffBaseMs: 20,
      backoffCapMs: 200,
      timeoutMs: 2000,
      followChanges: false,
    });
    await new Promise<void>((res) => r.once('round', () => res()));
    // the drain's note is written as its state changes, without blocking the drain: wait for it to land
    let during = await cli(['sync', 'status', '--db', db]);
    // a deadline that only bounds a hang (it lands in ms): a count of 50 ms tries was 5 s, short on a loaded machine
    for (const deadline = Date.now() + 30_000; !/last error:\s+network/.test(during.text) && Date.now() < deadline; ) {
      await new Promise((res) => setTimeout(res, 50));
      during = await cli(['sync', 'status', '--db', db]);
    }
    expect(during.text).toMatch(/last error:\s+network: .* at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d$/m);
    expect(during.text).toMatch(/last success:\s+none/);
    const s = await r.flush({ timeoutMs: 10_000 });
    expect(s.pendingRows).toBe(0);
    await r.stop();
    await proxy.close();
    await store.close();
    const after = await cli(['sync', 'status', '--db', db]);
    expect(after.text).toMatch(/backlog:\s+0 rows/);
    expect(after.text).toContain(`last success:  ${localTime(s.lastSuccessAt!)} (outbox emptied)`);
    expect(after.text).toMatch(/last error:\s+none since the last success \(earlier: network: .* at \d{4}-/);
    const ack = /last ack:\s+(.+)$/m.exec(after.text)?.[1];
    expect(ack).not.toBe('none');
    // a later drain on the store (another process) with nothing to send keeps what the earlier one noted: it erased the ack and the error
    const later = new SqliteCheckpointer({ path: db });
    const r2 = connectPlane(later, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      followChanges: false,
    });
    await r2.flush({ timeoutMs: 10_000 });
    await r2.stop();
    await later.close();
    const kept = await cli(['sync', 'status', '--db', db]);
    expect(kept.text).toContain(`last ack:      ${ack}`);
    expect(kept.text).toMatch(/last error:\s+none since the last success \(earlier: network: .* at \d{4}-/);
  });

  it('regression: sync now with an empty backlog exited 0 without contacting the plane; with the plane down it printed nothing for a minute', async () => {
    const db = tmp.file('empty.db');
    const store = new SqliteCheckpointer({ path: db });
    await store.setup();
    await store.close();
    const ok = await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key]);
    expect(ok.code, ok.text).toBe(0);
    expect(ok.text).toMatch(
      /plane http:\/\/127\.0\.0\.1:\d+: reachable in \d+ ms; project cli; key \S+ \(ingest,read\)\nsynced 0 rows: the outbox is empty/,
    );
    const badKey = await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', 'wm_nope_nope']);
    expect(badKey.code).toBe(1);
    expect(badKey.text).toMatch(/refused the key: 401 UNAUTHORIZED/);
    // restore says a refused key as sync now does (UNAUTHORIZED, not a plane fault), and imports nothing
    await expect(
      cli(['restore', 'some-run', '--db', tmp.file('never-2.db'), '--plane', plane.url, '--key', 'wm_nope_nope']),
    ).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringContaining('HTTP 401'),
    });
    const ingestOnly = await plane.key('cli', ['ingest']);
    await expect(
      cli(['restore', 'some-run', '--db', tmp.file('never-3.db'), '--plane', plane.url, '--key', ingestOnly]),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const readOnly = await plane.key('cli', ['read']);
    const down = `http://127.0.0.1:${await closedPort()}`;
    await expect(
      cli(['restore', 'some-run', '--db', tmp.file('never.db'), '--plane', down, '--key', key]),
    ).rejects.toMatchObject({
      code: 'PLANE_ERROR',
      message: expect.stringMatching(
        /^cannot reach the plane at http:\/\/127\.0\.0\.1:\d+ to restore 'some-run': .*ECONNREFUSED.*; nothing was imported$/,
      ),
    });
    const off = await cli(['sync', 'now', '--db', db, '--plane', down, '--key', key]);
    expect(off.code).toBe(1);
    expect(off.text).toMatch(/not usable: network: .*ECONNREFUSED/);

    // with a backlog and the plane down: each retry is printed with its reason, and the command gives up at --timeout
    const s2 = new SqliteCheckpointer({ path: db });
    await s2.put(step('waiting-run', 0));
    await s2.close();
    const t0 = Date.now();
    const waiting = await cli(['sync', 'now', '--db', db, '--plane', down, '--key', key, '--timeout', '2']);
    expect(waiting.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(waiting.text).toMatch(/^retry 1 (in \d+\.\d s|soon): network: .*ECONNREFUSED/m);
    expect(waiting.text).toMatch(/synced 0 rows; 1 waiting/);
    // a key without the ingest scope is named as the reason, before any row is sent
    const noIngest = await cli(['sync', 'now', '--db', db, '--plane', plane.url, '--key', readOnly]);
    expect(noIngest.code).toBe(1);
    expect(noIngest.text).toMatch(/lacks the 'ingest' scope: the 1 waiting rows cannot be sent/);
  });

  it('local times carry their offset', () => {
    const iso = '2026-03-01T12:00:00.000Z';
    const shown = localTime(iso);
    expect(shown).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d$/);
    const [d, t, off] = shown.split(' ');
    expect(Date.parse(`${d}T${t}${off}`)).toBe(Date.parse(iso));
  });

  it('draws a progress bar on a terminal and plain lines elsewhere', () => {
    let s = '';
    const bar = progress('restore', (x) => (s += x), true);
    bar.update(5, 10);
    bar.update(10, 10);
    bar.done();
    expect(s).toContain('\rrestore [###############...............]  50% 5/10');
    expect(s).toContain('100% 10/10\n');
    let plain = '';
    const p = progress('sync', (x) => (plain += x), false);
    for (let i = 1; i <= 100; i++) p.update(i, 100);
    expect(plain.split('\n').filter(Boolean).length).toBe(10);
  });
});

describe('the built binary (dist/), as a user runs it', () => {
  it('regression: `waymark sync now` and `sync status` from dist/ reach the plane (a TypeScript 7 emit once made the drain client throw "Class constructor Pool cannot be invoked without new")', async () => {
    const db = tmp.file('bin-sync.db');
    const store = new SqliteCheckpointer({ path: db });
    for (let i = 0; i < 3; i++) await store.put(step('bin-sync', i));
    await store.close();
    const now = await waymarkAsync(['sync', 'now', '--db', db, '--plane', plane.url, '--key', key]);
    expect(now.stderr).not.toMatch(/without 'new'/);
    expect(now.code, now.stdout + now.stderr).toBe(0);
    expect(now.stdout).toMatch(/synced 3 rows/);
    const status = await waymarkAsync(['sync', 'status', '--db', db]);
    expect(status.code, status.stdout + status.stderr).toBe(0);
  });
});
