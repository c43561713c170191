/**
 * Approvals over real HTTP, on PGlite and on Postgres: the
 * decision endpoint (approve scope, bad input named, refusals changing
 * nothing), the inbox, the decision feed's long poll, the claim that applies
 * a decision, and the execution view and restore that carry it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createKey } from '../../plane/auth.js';
import { feedWaiters } from '../../plane/decisions.js';
import { rowsOf } from '../../plane/db/open.js';
import { uuidv7 } from '../../shared/ids.js';
import { DecisionFeed, DecisionView, Page, PauseView, RestorePage } from '../../shared/protocol.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { FEED_RECHECK_MS } from '../../plane/long-poll.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('decision routes on postgres');

function routeSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`decision routes on ${name}`, () => {
    let plane: TestPlane;
    let approver = '';
    let reader = '';
    let writer = '';
    const post = (path: string, json: unknown, key = approver) => call(`${plane.url}${path}`, { key, json });
    const get = (path: string, key = reader) => call(`${plane.url}${path}`, { key });
    const decisions = async () =>
      rowsOf<{ n: number }>(await plane.database.db.execute(sql`SELECT count(*)::int AS n FROM decisions`))[0].n;
    const paused = async (executionId: string, writerId = 'laptop-a') => {
      let checkpointId = '';
      const rows = await eventsOf(async (s) => {
        await s.put(step(executionId, 0));
        checkpointId = (
          await s.recordInterrupt(pause(executionId, 1), { reason: 'approve refund', context: { amount: 120 } })
        ).checkpoint.id;
      }, writerId);
      const r = await call(`${plane.url}/v1/ingest`, { key: writer, json: { protocol: 1, writerId, rows } });
      expect(r.body.rejected).toBe(0);
      return checkpointId;
    };

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      approver = (
        await createKey(plane.database.db, {
          project: 'shop',
          name: 'refund-manager',
          scopes: ['approve'],
          createProject: true,
        })
      ).key;
      reader = await plane.key('shop', ['read']);
      writer = await plane.key('shop', ['ingest']);
    });
    afterAll(async () => plane?.close());

    it('the OpenAPI document lists the approvals endpoints; an approve key records a decision (201, decided by the key name), a read or ingest key is refused 403 and nothing is stored', async () => {
      const doc = await call(`${plane.url}/openapi.json`);
      expect(Object.keys(doc.body.paths)).toEqual(
        expect.arrayContaining(['/v1/executions/{id}/decision', '/v1/pauses', '/v1/decisions']),
      );
      const cp = await paused('r-1');
      for (const key of [reader, writer]) {
        const r = await post('/v1/executions/r-1/decision', { checkpointId: cp, approved: true }, key);
        expect(r.status).toBe(403);
        expect(r.body.error).toMatchObject({ code: 'FORBIDDEN' });
        expect(r.body.error.message).toContain("'approve'");
      }
      expect((await post('/v1/executions/r-1/decision', { checkpointId: cp, approved: true }, '')).status).toBe(401);
      expect(await decisions()).toBe(0);
      const r = await post('/v1/executions/r-1/decision', {
        checkpointId: cp,
        approved: true,
        comment: 'within policy',
      });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        executionId: 'r-1',
        checkpointId: cp,
        approved: true,
        metadata: { comment: 'within policy' },
        decidedBy: 'refund-manager',
        source: 'plane',
        state: 'pending',
      });
      expect((await get('/v1/executions/r-1')).body.pause).toMatchObject({
        state: 'open',
        decision: { decisionId: r.body.decisionId, state: 'pending' },
      });
      // every answer is exactly the shared protocol's shape (strict: no field more or less), as the client parses it
      expect(DecisionView.parse(r.body)).toEqual(r.body);
      const { state: _s, appliedBy: _b, appliedAt: _a, feedSeq: _f, ...decision } = r.body;
      expect(RestorePage.parse((await get('/v1/executions/r-1/restore')).body).decision).toEqual(decision);
      const inbox = (await get('/v1/pauses', approver)).body;
      expect(Page(PauseView).parse(inbox)).toEqual(inbox);
      const feed = (await get('/v1/decisions', writer)).body;
      expect(DecisionFeed.parse(feed)).toEqual(feed);
      expect((await get('/v1/executions/r-1/restore')).body).toMatchObject({
        pending: { checkpointId: cp },
        decision: { decisionId: r.body.decisionId, approved: true, decidedBy: 'refund-manager', source: 'plane' },
      });
    });

    it('a key named with 128 characters of two UTF-16 units each (the longest name a key may have) records decisions under its whole name', async () => {
      const name = `a${'😀'.repeat(127)}`;
      const { key } = await createKey(plane.database.db, { project: 'shop', name, scopes: ['approve'] });
      const cp = await paused('r-long-name');
      const r = await post('/v1/executions/r-long-name/decision', { checkpointId: cp, approved: true }, key);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      // the wire allows 200 units: the name is cut there, between characters, never inside one
      expect(r.body.decidedBy).toBe(`a${'😀'.repeat(99)}`);
      expect(r.body.decidedBy.isWellFormed()).toBe(true);
      // a key named before names were checked (a control character, or blank): it decides under its escaped name, or its id
      const odd = await createKey(plane.database.db, { project: 'shop', name: 'odd', scopes: ['approve'] });
      await plane.database.db.execute(sql`UPDATE api_keys SET name = ${'ops\u001b[31m'} WHERE id = ${odd.id}`);
      const cp2 = await paused('r-odd-name');
      const d2 = await post('/v1/executions/r-odd-name/decision', { checkpointId: cp2, approved: true }, odd.key);
      expect([d2.status, d2.body.decidedBy]).toEqual([201, 'ops\\u001b[31m']);
      await plane.database.db.execute(sql`UPDATE api_keys SET name = ${' '} WHERE id = ${odd.id}`);
      const cp3 = await paused('r-blank-name');
      const d3 = await post('/v1/executions/r-blank-name/decision', { checkpointId: cp3, approved: true }, odd.key);
      expect([d3.status, d3.body.decidedBy]).toEqual([201, odd.id]);
    });

    it('bad input is refused 400 naming every problem; a second decision 409 ALREADY_DECIDED naming the first; a claimed pause 409 PAUSE_CLOSED; none changes anything', async () => {
      const cp = await paused('r-2');
      const before = await decisions();
      const bad = await post('/v1/executions/r-2/decision', {
        checkpointId: cp,
        approved: 'yes',
        metadata: 'x',
        bogus: 1,
        other: 2,
      });
      expect(bad.status).toBe(400);
      // the code a local store refuses a bad decision with, too
      expect(bad.body.error.code).toBe('INVALID_DECISION');
      for (const bit of ['bogus', 'other', 'approved', 'metadata']) expect(bad.body.error.message).toContain(bit);
      const notJson = await call(`${plane.url}/v1/executions/r-2/decision`, {
        key: approver,
        raw: '{not json',
        headers: { 'content-type': 'application/json' },
      });
      expect(notJson.status).toBe(400);
      expect(notJson.body.error.code).toBe('BAD_JSON');
      const huge = await post('/v1/executions/r-2/decision', {
        checkpointId: cp,
        approved: true,
        metadata: { blob: 'x'.repeat(1024 * 1024) },
      });
      expect(huge.status).toBe(413);
      expect(huge.body.error.code).toBe('TOO_LARGE');
      expect(
        (await post('/v1/executions/r-2/decision', { checkpointId: cp, approved: true, comment: 'x'.repeat(5000) }))
          .status,
      ).toBe(400);
      expect(await decisions()).toBe(before);
      const first = await post('/v1/executions/r-2/decision', { checkpointId: cp, approved: false, comment: 'no' });
      expect(first.status).toBe(201);
      const second = await post('/v1/executions/r-2/decision', { checkpointId: cp, approved: true });
      expect(second.status).toBe(409);
      expect(second.body.error).toMatchObject({
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: first.body.decisionId, approved: false } },
      });
      const cp3 = await paused('r-3');
      expect(
        (
          await call(`${plane.url}/v1/executions/r-3/claim`, {
            key: writer,
            json: { checkpointId: cp3, writerId: 'laptop-b' },
          })
        ).status,
      ).toBe(200);
      const closed = await post('/v1/executions/r-3/decision', { checkpointId: cp3, approved: true });
      expect(closed.status).toBe(409);
      expect(closed.body.error).toMatchObject({ code: 'PAUSE_CLOSED', details: { claimedBy: 'laptop-b' } });
      const missing = await post('/v1/executions/r-3/decision', { checkpointId: uuidv7(), approved: true });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('PAUSE_NOT_FOUND');
      expect(await decisions()).toBe(before + 1);
    });

    it('a claim with the decision id shows it claimed, the writer’s reported local claim shows it applied and by whom; the inbox drops it', async () => {
      const cp = await paused('r-4');
      const d = (await post('/v1/executions/r-4/decision', { checkpointId: cp, approved: true })).body;
      const inbox = async () =>
        (await get('/v1/pauses?limit=1000', approver)).body.items as {
          executionId: string;
          state: string;
          decision: { state: string } | null;
        }[];
      expect((await inbox()).find((p) => p.executionId === 'r-4')).toMatchObject({
        state: 'open',
        decision: { state: 'pending' },
      });
      const claim = await call(`${plane.url}/v1/executions/r-4/claim`, {
        key: writer,
        json: { checkpointId: cp, writerId: 'laptop-a', decisionId: d.decisionId },
      });
      expect(claim.status).toBe(200);
      expect((await get('/v1/executions/r-4')).body.pause.decision).toMatchObject({
        state: 'claimed',
        appliedBy: 'laptop-a',
      });
      expect((await inbox()).find((p) => p.executionId === 'r-4')).toMatchObject({
        state: 'claimed',
        decision: { state: 'claimed' },
      });
      // another writer's claim is refused naming the winning claim's decision (a losing decision worker reports it applied elsewhere)
      const lost = await call(`${plane.url}/v1/executions/r-4/claim`, {
        key: writer,
        json: { checkpointId: cp, writerId: 'laptop-b', decisionId: d.decisionId },
      });
      expect(lost.status).toBe(409);
      expect(lost.body.error).toMatchObject({
        code: 'ALREADY_CLAIMED',
        details: { writerId: 'laptop-a', decisionId: d.decisionId, applied: false },
      });
      const applied: OutboxEvent = {
        kind: 'interrupt_claimed',
        id: uuidv7(),
        executionId: 'r-4',
        checkpointId: cp,
        writerId: 'laptop-a',
        claimedAt: new Date().toISOString(),
        decisionId: d.decisionId,
      };
      expect(
        (
          await call(`${plane.url}/v1/ingest`, {
            key: writer,
            json: { protocol: 1, writerId: 'laptop-a', rows: [applied] },
          })
        ).body.accepted,
      ).toBe(1);
      expect((await get('/v1/executions/r-4')).body.pause.decision).toMatchObject({
        state: 'applied',
        appliedBy: 'laptop-a',
      });
      expect((await inbox()).map((p) => p.executionId)).not.toContain('r-4');
      const feed = (await get('/v1/decisions?limit=1000')).body.items as { decisionId: string; state: string }[];
      expect(feed.find((i) => i.decisionId === d.decisionId)).toMatchObject({ state: 'applied' });
      // once applied, a losing claim is told so (a losing worker reports applied_elsewhere only then)
      const lostAfter = await call(`${plane.url}/v1/executions/r-4/claim`, {
        key: writer,
        json: { checkpointId: cp, writerId: 'laptop-b', decisionId: d.decisionId },
      });
      expect(lostAfter.body.error).toMatchObject({
        code: 'ALREADY_CLAIMED',
        details: { writerId: 'laptop-a', decisionId: d.decisionId, applied: true },
      });
      expect(
        (
          await call(`${plane.url}/v1/executions/r-4/claim`, {
            key: writer,
            json: { checkpointId: cp, writerId: 'laptop-a', decisionId: 'nope' },
          })
        ).status,
      ).toBe(400);
    });

    it("a claim of a deleted run's pause is 409 ALREADY_CLAIMED saying it was deleted (not a 404 a decision worker retries forever)", async () => {
      const cp = await paused('r-del');
      const del = await call(`${plane.url}/v1/ingest`, {
        key: writer,
        json: {
          protocol: 1,
          writerId: 'laptop-a',
          rows: [
            { kind: 'execution_deleted', id: uuidv7(), executionId: 'r-del', deletedAt: new Date().toISOString() },
          ],
        },
      });
      expect(del.body.accepted).toBe(1);
      for (const decisionId of [undefined, uuidv7()]) {
        const r = await call(`${plane.url}/v1/executions/r-del/claim`, {
          key: writer,
          json: { checkpointId: cp, writerId: 'worker-b', ...(decisionId ? { decisionId } : {}) },
        });
        expect(r.status).toBe(409);
        expect(r.body.error).toMatchObject({
          code: 'ALREADY_CLAIMED',
          details: { writerId: 'laptop-a', decisionId: null, closed: 'delete' },
        });
        expect(r.body.error.message).toContain('deleted');
      }
      // a pause never on the plane is still 404
      expect(
        (
          await call(`${plane.url}/v1/executions/r-del/claim`, {
            key: writer,
            json: { checkpointId: uuidv7(), writerId: 'worker-b' },
          })
        ).status,
      ).toBe(404);
    });

    it('the feed: read or ingest keys (an approve-only key 403); a long poll answers when a decision is recorded over HTTP, else empty after wait with the same cursor; bad cursor and wait named', async () => {
      expect((await get('/v1/decisions', approver)).status).toBe(403);
      expect((await get('/v1/pauses', writer)).status).toBe(403);
      const now = await get('/v1/decisions?limit=1000', writer);
      expect(now.status).toBe(200);
      const cursor = now.body.nextCursor as string;
      const t0 = performance.now();
      const empty = await get(`/v1/decisions?after=${cursor}&wait=1`, writer);
      expect(empty.body).toEqual({ items: [], nextCursor: cursor });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(950);
      const cp = await paused('r-5');
      let answeredAt = 0;
      const waiting = get(`/v1/decisions?after=${cursor}&wait=20`, writer).then(
        (r) => ((answeredAt = performance.now()), r),
      );
      await until('the poll waits', () => feedWaiters(plane.database.db).polls === 1);
      const d = await post('/v1/executions/r-5/decision', { checkpointId: cp, approved: true });
      const recordedAt = performance.now();
      const got = await waiting;
      // woken by the recording, not left to its 20 s wait (which would answer the decision too). The bound is the
      // plane's own intervals with a wide margin, measured from the recording's answer: at most 10 of its database
      // rechecks (FEED_RECHECK_MS; the in-process wake-up is at once), half the poll's wait; only a hang or a poll
      // that runs out its wait reaches it, not a loaded machine
      expect(answeredAt - recordedAt, 'ms from the recording to the poll answering').toBeLessThan(10 * FEED_RECHECK_MS);
      expect(got.body.items.map((i: { decisionId: string }) => i.decisionId)).toEqual([d.body.decisionId]);
      expect(Number(got.body.nextCursor)).toBe(d.body.feedSeq);
      for (const q of [
        'after=abc',
        'after=-1',
        'after=9007199254740993',
        'after=123456789012345678',
        'wait=26',
        'wait=x',
        'limit=0',
      ]) {
        const r = await get(`/v1/decisions?${q}`, writer);
        expect(r.status, q).toBe(400);
      }
      expect((await get('/v1/decisions?after=abc', writer)).body.error.code).toBe('BAD_CURSOR');
      const unsafe = await get('/v1/decisions?after=9007199254740993', writer);
      expect(unsafe.body.error).toMatchObject({ code: 'BAD_CURSOR' });
      expect(unsafe.body.error.message).toContain('largest feed seq');
      // a poller that hangs up: the plane goes on answering
      const ac = new AbortController();
      const hung = fetch(`${plane.url}/v1/decisions?after=${got.body.nextCursor}&wait=20`, {
        headers: { authorization: `Bearer ${writer}` },
        signal: ac.signal,
      }).catch((e: Error) => e.name);
      await until('the poll waits', () => feedWaiters(plane.database.db).polls === 1);
      ac.abort();
      expect(await hung).toBe('AbortError');
      // the plane lets go of the hung-up poll: no listener, no recheck timer left behind
      await until('the hung-up poll is gone', () => {
        const w = feedWaiters(plane.database.db);
        return w.polls === 0 && w.listeners === 0 && w.timers === 0;
      });
      expect((await get('/v1/decisions?limit=1', writer)).status).toBe(200);
    });
  });
}

routeSuite('pglite', () => 'pglite');

describe.skipIf(!pg)('decision routes on postgres', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_decision_routes');
  });
  afterAll(async () => tdb?.drop());
  routeSuite('postgres', () => ({ url: tdb.url }));
});

describe('a plane closing with a long poll waiting', () => {
  it('closes promptly; the poll ends instead of holding the plane for its wait', async () => {
    const plane = await startTestPlane('pglite');
    const key = await plane.key('p', ['read']);
    const waitS = 25;
    const poll = fetch(`${plane.url}/v1/decisions?wait=${waitS}`, { headers: { authorization: `Bearer ${key}` } }).then(
      (r) => r.status,
      () => 'closed',
    );
    await until('the poll waits', () => feedWaiters(plane.database.db).polls === 1);
    const t = performance.now();
    await plane.close();
    const ms = performance.now() - t;
    // the poll was cut by the close, not answered at the end of its wait
    expect(await poll).toBe('closed');
    // and the plane let go of it: no poll, listener or recheck timer left on the closed database
    await until('the plane let go of the poll', () => {
      const w = feedWaiters(plane.database.db);
      return w.polls === 0 && w.listeners === 0 && w.timers === 0;
    });
    // a plane held for the poll would take its whole wait to close: half of it bounds only a hang (closing takes ms)
    expect(ms, 'the close waited for the poll').toBeLessThan((waitS * 1000) / 2);
  });
});
