/**
 * Run requests over real HTTP, on PGlite and on Postgres: the `operate` scope records a retry
 * of a failed run, a recover of a stale one, a fork from a row; bad input
 * names every problem with a stable code and changes nothing; a duplicate open
 * request is refused; the worker's listing, fork claim and outcome report; a
 * cancel keeps the name of the key that cancelled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../plane/db/open.js';
import { encodeCursor } from '../../plane/reads/cursor.js';
import { RunRequestPage, RunRequestView } from '../../shared/protocol.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step, takeEvents } from '../helpers/rows.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const pg = await pgReady('run requests on postgres');

function requestSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`run requests at the plane on ${name}`, () => {
    let plane: TestPlane;
    const keys: Record<string, string> = {};
    let laptop: SqliteCheckpointer;
    const post = (path: string, json: unknown, key = keys.operator) => call(`${plane.url}${path}`, { key, json });
    const get = (path: string, key = keys.reader) => call(`${plane.url}${path}`, { key });
    const requestSeqs = async () =>
      rowsOf<{ seq: number }>(await plane.database.db.execute(sql`SELECT seq::int AS seq FROM run_requests`)).map(
        (r) => r.seq,
      );
    const count = async () =>
      rowsOf<{ n: number }>(await plane.database.db.execute(sql`SELECT count(*)::int AS n FROM run_requests`))[0].n;
    /** A run on the laptop, synced: `steps` model calls, then failed or left running; its rows' ids. */
    const run = async (id: string, end: 'running' | 'failed' | 'completed' = 'running', steps = 2) => {
      const ids: string[] = [];
      for (let i = 0; i < steps; i++) ids.push((await laptop.put(step(id, i))).id);
      if (end !== 'running')
        ids.push(
          (
            await laptop.put({
              ...step(id, steps),
              nodeId: 'run_end',
              step: 'run_end',
              status: end,
              ...(end === 'failed' ? { nodeOutput: { error: { code: 'MODEL_ERROR', message: 'upstream 500' } } } : {}),
            })
          ).id,
        );
      const r = await call(`${plane.url}/v1/ingest`, {
        key: keys.ingest,
        json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
      });
      expect(r.body.rejected).toBe(0);
      return ids;
    };
    /** The run's hold at the plane expires now (its runner died: nothing renews it). */
    const expire = (id: string) =>
      plane.database.db.execute(
        sql`UPDATE run_owners SET expires_at = now() - interval '1 minute' WHERE execution_id = ${id}`,
      );

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      keys.operator = await plane.key('acme', ['operate']);
      keys.reader = await plane.key('acme', ['read']);
      keys.ingest = await plane.key('acme', ['ingest']);
      keys.approver = await plane.key('acme', ['approve', 'cancel']);
      keys.admin = await plane.key('acme', ['admin']);
      await plane.database.db.execute(
        sql`UPDATE api_keys SET name = 'night-operator' WHERE id = ${keys.operator.split('_')[1]}`,
      );
      laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });
    });
    afterAll(async () => {
      await laptop?.close();
      await plane?.close();
    });

    it('an operate key asks to retry a failed run: recorded open, naming the failed marker and who asked; the worker lists it', async () => {
      const ids = await run('failed-1', 'failed');
      const r = await post('/v1/executions/failed-1/requests', { action: 'retry', reason: 'upstream is back' });
      expect(r.status).toBe(201);
      expect(RunRequestView.parse(r.body)).toEqual(r.body);
      expect(r.body).toMatchObject({
        executionId: 'failed-1',
        action: 'retry',
        checkpointId: ids[2],
        checkpointSeq: 2,
        forkExecutionId: null,
        reason: 'upstream is back',
        requestedBy: 'night-operator',
        state: 'open',
        settledBy: null,
      });
      const open = await get('/v1/requests?state=open', keys.ingest);
      expect(open.status).toBe(200);
      expect(RunRequestPage.parse(open.body).items.map((i) => i.requestId)).toContain(r.body.requestId);
    });

    it("a worker's listing of its writer's runs: the requests of runs that writer delivered, none of another's; bad writer ids refused", async () => {
      await run('mine-1', 'failed');
      const other = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-b' });
      try {
        await other.put(step('theirs-1', 0));
        await other.put({ ...step('theirs-1', 1), nodeId: 'run_end', step: 'run_end', status: 'failed' });
        const sent = await call(`${plane.url}/v1/ingest`, {
          key: keys.ingest,
          json: { protocol: 1, writerId: 'laptop-b', rows: await takeEvents(other) },
        });
        expect(sent.body.rejected).toBe(0);
      } finally {
        await other.close();
      }
      const ids: Record<string, string> = {};
      for (const id of ['mine-1', 'theirs-1']) {
        const r = await post(`/v1/executions/${id}/requests`, { action: 'retry', reason: 'both' });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        ids[id] = r.body.requestId;
      }
      const listed = async (q: string) =>
        RunRequestPage.parse((await get(`/v1/requests?state=open&limit=1000${q}`, keys.ingest)).body).items.map(
          (i) => i.requestId,
        );
      const mine = await listed('&writerId=laptop-a');
      expect(mine).toContain(ids['mine-1']);
      expect(mine).not.toContain(ids['theirs-1']);
      expect(await listed('&writerId=laptop-b')).toEqual([ids['theirs-1']]);
      expect(await listed('&writerId=laptop-nobody')).toEqual([]);
      // paged one at a time, the writer's listing carries the same, in order, and ends
      const paged: string[] = [];
      let after: string | null = null;
      do {
        const page = RunRequestPage.parse(
          (
            await get(
              `/v1/requests?state=open&limit=1&writerId=laptop-a${after ? `&after=${encodeURIComponent(after)}` : ''}`,
              keys.ingest,
            )
          ).body,
        );
        paged.push(...page.items.map((i) => i.requestId));
        after = page.nextCursor;
      } while (after);
      expect(paged).toEqual(mine);
      expect(await listed('')).toEqual(expect.arrayContaining([ids['mine-1'], ids['theirs-1']]));
      for (const q of ['&writerId=plane', '&writerId=a&writerId=b', '&writerId=']) {
        const r = await get(`/v1/requests?state=open${q}`, keys.ingest);
        expect([r.status, r.body.error?.code], q).toEqual([400, expect.any(String)]);
      }
    });

    it('a body with problems is INVALID_RUN_REQUEST naming every one; nothing is recorded', async () => {
      await run('bad-body', 'failed');
      const before = await count();
      const r = await post('/v1/executions/bad-body/requests', { action: 'explode', checkpointId: 7, colour: 'red' });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_RUN_REQUEST');
      for (const part of ['action', 'checkpointId', "unknown field 'colour'"])
        expect(r.body.error.message).toContain(part);
      const fork = await post('/v1/executions/bad-body/requests', { action: 'fork' });
      expect(fork.body.error).toMatchObject({ code: 'INVALID_RUN_REQUEST' });
      expect(fork.body.error.message).toContain('checkpointId: required for a fork');
      const retry = await post('/v1/executions/bad-body/requests', { action: 'retry', checkpointId: 'x' });
      expect(retry.body.error.message).toContain('only a fork names a row');
      expect(await count()).toBe(before);
    });

    it('refusals of the run name the stable code and change nothing: unknown run, retry of a run not failed, recover of a run not stale, fork from the end marker or another run', async () => {
      const before = await count();
      const unknown = await post('/v1/executions/no-such-run/requests', { action: 'retry' });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('EXECUTION_NOT_FOUND');
      await run('live-1', 'running');
      const retry = await post('/v1/executions/live-1/requests', { action: 'retry' });
      expect(retry.status).toBe(409);
      expect(retry.body.error).toMatchObject({ code: 'RUN_NOT_FAILED', details: { status: 'running' } });
      const recover = await post('/v1/executions/live-1/requests', { action: 'recover' });
      expect(recover.status).toBe(409);
      expect(recover.body.error.code).toBe('RUN_NOT_STALE');
      expect(recover.body.error.message).toContain('still holds it');
      // nobody's (no owner record): shown running, not stale, so not recovered either; the message says why
      await run('free-1', 'running');
      await plane.database.db.execute(sql`DELETE FROM run_owners WHERE execution_id = 'free-1'`);
      expect((await get('/v1/executions/free-1')).body.execution.status).toBe('running');
      const free = await post('/v1/executions/free-1/requests', { action: 'recover' });
      expect(free.status).toBe(409);
      expect(free.body.error).toMatchObject({ code: 'RUN_NOT_STALE', details: { status: 'running', hold: 'free' } });
      expect(free.body.error.message).toContain('nobody holds it');
      const doneIds = await run('done-1', 'completed');
      expect((await post('/v1/executions/done-1/requests', { action: 'recover' })).body.error.code).toBe(
        'RUN_NOT_STALE',
      );
      const end = await post('/v1/executions/done-1/requests', { action: 'fork', checkpointId: doneIds[2] });
      expect(end.status).toBe(409);
      expect(end.body.error.code).toBe('NOT_FORKABLE');
      expect(end.body.error.message).toContain('run-end marker');
      const other = await post('/v1/executions/live-1/requests', { action: 'fork', checkpointId: doneIds[0] });
      expect(other.body.error.code).toBe('NOT_FORKABLE');
      expect(other.body.error.message).toContain('is not a row of execution');
      expect(await count()).toBe(before);
    });

    it('a stale run (its hold expired) is recovered from its newest row; a fork names its row and a new execution id', async () => {
      const ids = await run('stale-1', 'running', 3);
      await expire('stale-1');
      const r = await post('/v1/executions/stale-1/requests', { action: 'recover' });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ action: 'recover', checkpointId: ids[2], checkpointSeq: 2, state: 'open' });
      const fork = await post('/v1/executions/stale-1/requests', { action: 'fork', checkpointId: ids[1] }, keys.admin);
      expect(fork.status).toBe(201);
      expect(fork.body).toMatchObject({ action: 'fork', checkpointId: ids[1], checkpointSeq: 1 });
      expect(fork.body.forkExecutionId).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('a second open request of the same run and action is REQUEST_OPEN naming the first (every problem named); nothing is recorded', async () => {
      await run('dup-1', 'failed');
      const first = await post('/v1/executions/dup-1/requests', { action: 'retry' });
      expect(first.status).toBe(201);
      const before = await count();
      const again = await post('/v1/executions/dup-1/requests', { action: 'retry' });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('REQUEST_OPEN');
      expect(again.body.error.details.request.requestId).toBe(first.body.requestId);
      expect(again.body.error.message).toContain("asked by 'night-operator'");
      // not failed and a duplicate: both named, the first's code
      await run('dup-2', 'running');
      await expire('dup-2');
      expect((await post('/v1/executions/dup-2/requests', { action: 'recover' })).status).toBe(201);
      const both = await post('/v1/executions/dup-2/requests', { action: 'retry' });
      expect(both.body.error.code).toBe('RUN_NOT_FAILED');
      const again2 = await post('/v1/executions/dup-2/requests', { action: 'recover' });
      expect(again2.body.error.code).toBe('REQUEST_OPEN');
      expect(await count()).toBe(before + 1);
      // five at once (a double click, two operators): one is recorded, the others are REQUEST_OPEN
      await run('dup-3', 'failed');
      const five = await Promise.all(
        Array.from({ length: 5 }, () => post('/v1/executions/dup-3/requests', { action: 'retry' })),
      );
      expect(five.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      for (const r of five.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('REQUEST_OPEN');
      expect(await count()).toBe(before + 2);
    });

    it('scopes: read, ingest, approve and cancel keys cannot ask (403, nothing recorded); operate and admin can', async () => {
      await run('scoped-1', 'failed');
      const before = await count();
      for (const key of [keys.reader, keys.ingest, keys.approver]) {
        const r = await post('/v1/executions/scoped-1/requests', { action: 'retry' }, key);
        expect(r.status).toBe(403);
        expect(r.body.error.code).toBe('FORBIDDEN');
        expect(r.body.error.message).toContain("'operate'");
      }
      expect(await count()).toBe(before);
      expect((await post('/v1/executions/scoped-1/requests', { action: 'retry' }, keys.admin)).status).toBe(201);
    });

    it("a worker's report settles a request once: applied wins over superseded, a later report keeps the first applier; a fork's claim goes to one writer", async () => {
      await run('settle-1', 'failed');
      const req = (await post('/v1/executions/settle-1/requests', { action: 'retry' })).body;
      const report = (json: unknown, key = keys.ingest) => post(`/v1/requests/${req.requestId}/outcome`, json, key);
      const bad = await report({ writerId: 'w', outcome: 'maybe', extra: 1 });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toContain("unknown field 'extra'");
      expect(bad.body.error.message).toContain('outcome');
      expect((await report({ writerId: 'w', outcome: 'applied' }, keys.reader)).status).toBe(403);
      const sup = await report({ writerId: 'laptop-b', outcome: 'superseded', code: 'MOVED_ON', message: 'moved' });
      expect(sup.body).toMatchObject({ state: 'superseded', settledBy: 'laptop-b', code: 'MOVED_ON' });
      const applied = await report({ writerId: 'laptop-a', outcome: 'applied', runStatus: 'completed' });
      expect(applied.body).toMatchObject({ state: 'applied', settledBy: 'laptop-a', runStatus: 'completed' });
      const late = await report({ writerId: 'laptop-b', outcome: 'applied' });
      expect(late.body).toMatchObject({ state: 'applied', settledBy: 'laptop-a' });
      expect(
        (await get('/v1/requests?state=open', keys.ingest)).body.items.map((i: { requestId: string }) => i.requestId),
      ).not.toContain(req.requestId);

      const ids = await run('fork-src', 'running');
      const fork = (await post('/v1/executions/fork-src/requests', { action: 'fork', checkpointId: ids[0] })).body;
      const claim = (writerId: string) => post(`/v1/requests/${fork.requestId}/claim`, { writerId }, keys.ingest);
      expect((await claim('laptop-a')).body.outcome).toBe('won');
      expect((await claim('laptop-b')).body).toMatchObject({ outcome: 'lost', request: { claimedBy: 'laptop-a' } });
      expect((await claim('laptop-a')).body.outcome).toBe('won');
      const missing = await post(
        '/v1/requests/0190a5c8-0000-7000-8000-000000000000/outcome',
        { writerId: 'w', outcome: 'applied' },
        keys.ingest,
      );
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('REQUEST_NOT_FOUND');
    });

    it('a request of a run deleted while it waits is settled superseded (EXECUTION_GONE), never applied', async () => {
      await run('deleted-1', 'failed');
      const req = (await post('/v1/executions/deleted-1/requests', { action: 'retry' })).body;
      await laptop.deleteExecution('deleted-1');
      const r = await call(`${plane.url}/v1/ingest`, {
        key: keys.ingest,
        json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
      });
      expect(r.body.rejected).toBe(0);
      expect((await get(`/v1/requests/${req.requestId}`)).body).toMatchObject({
        state: 'superseded',
        code: 'EXECUTION_GONE',
      });
    });

    // a serialized database (PGlite: one connection) cannot commit two requests out of order; Postgres can
    if (name === 'postgres')
      it('the request cursor is in commit order: a request that drew its seq first but commits last is not skipped by a follower', async () => {
        await run('order-slow', 'failed');
        await run('order-fast', 'failed');
        // the slow run's request stalls after its insert, before its commit (a real trigger, real sleep)
        await plane.database.db.execute(sql`
          CREATE OR REPLACE FUNCTION test_slow_request() RETURNS trigger AS $$
          BEGIN
            IF NEW.execution_id = 'order-slow' THEN PERFORM pg_sleep(1.5); END IF;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`);
        await plane.database.db.execute(
          sql`CREATE TRIGGER test_slow_request AFTER INSERT ON run_requests FOR EACH ROW EXECUTE FUNCTION test_slow_request()`,
        );
        try {
          const page = async (after: number) =>
            (await get(`/v1/requests?limit=100&after=${encodeCursor(after)}`)).body as {
              items: { requestId: string; seq: number }[];
            };
          // a follower of the listing: from the newest request now, its cursor the last seq it saw
          let cursor = Math.max(0, ...(await requestSeqs()));
          const seen = new Set<string>();
          const slow = post('/v1/executions/order-slow/requests', { action: 'retry' });
          await new Promise((r) => setTimeout(r, 300));
          const fast = post('/v1/executions/order-fast/requests', { action: 'retry' });
          // a follower of the listing, paging with its cursor while both commit
          const follow = async () => {
            const t = Date.now();
            while (Date.now() - t < 4000) {
              const p = await page(cursor);
              for (const i of p.items) seen.add(i.requestId);
              if (p.items.length) cursor = p.items[p.items.length - 1].seq;
              await new Promise((r) => setTimeout(r, 20));
            }
          };
          const [s, f] = await Promise.all([slow, fast, follow()]);
          expect(s.status).toBe(201);
          expect(f.status).toBe(201);
          expect(seen.has(f.body.requestId)).toBe(true);
          expect(seen.has(s.body.requestId)).toBe(true);
        } finally {
          await plane.database.db.execute(sql`DROP TRIGGER IF EXISTS test_slow_request ON run_requests`);
        }
      });

    it('a bad outcome report is INVALID_REQUEST naming every problem in details.problems; nothing changes', async () => {
      await run('bad-outcome', 'failed');
      const req = await post('/v1/executions/bad-outcome/requests', { action: 'retry' });
      expect(req.status).toBe(201);
      const r = await post(
        `/v1/requests/${req.body.requestId}/outcome`,
        { writerId: '', outcome: 'done', extra: 1 },
        keys.ingest,
      );
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
      expect(r.body.error.details.problems.length).toBeGreaterThanOrEqual(3);
      expect((await get(`/v1/requests/${req.body.requestId}`)).body.state).toBe('open');
      // text the database cannot store is named, not a 500
      const text = await post(
        `/v1/requests/${req.body.requestId}/outcome`,
        { writerId: 'w\u0000', outcome: 'refused', code: 'X\u0000', message: 'half \ud800', runStatus: 'failed\u0000' },
        keys.ingest,
      );
      expect(text.status).toBe(400);
      expect(text.body.error.code).toBe('INVALID_REQUEST');
      expect(text.body.error.details.problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^writerId: /),
          'code: a string holds U+0000',
          'message: a string holds a lone surrogate (not well-formed Unicode)',
          'runStatus: a string holds U+0000',
        ]),
      );
      expect((await get(`/v1/requests/${req.body.requestId}`)).body.state).toBe('open');
    });

    it('a cancel keeps the name of the key that cancelled the run', async () => {
      await run('cancel-1', 'running');
      await plane.database.db.execute(
        sql`UPDATE api_keys SET name = 'support-desk' WHERE id = ${keys.approver.split('_')[1]}`,
      );
      const r = await post('/v1/executions/cancel-1/cancel', { reason: 'duplicate' }, keys.approver);
      expect(r.status).toBe(200);
      const [o] = rowsOf<{ by: string | null }>(
        await plane.database.db.execute(sql`SELECT cancelled_by AS by FROM run_owners WHERE execution_id = 'cancel-1'`),
      );
      expect(o.by).toBe('support-desk');
    });
  });
}

requestSuite('pglite', () => 'pglite');

describe.skipIf(!pg)('run requests on postgres', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_run_requests');
  });
  afterAll(async () => tdb?.drop());
  requestSuite('postgres', () => ({ url: tdb.url }));
});
