/**
 * The plane's decisions store (plane/decisions.ts), on PGlite and on real
 * Postgres: recording (one per open pause, every refusal changes nothing),
 * the state derived from the pause's claim, ingest of local decisions, the
 * approvals inbox order, and the feed with its long poll (woken in process,
 * and by another plane process's recording through the database recheck).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { createKey } from '../../plane/auth.js';
import { claimPause } from '../../plane/claims.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { claims, pendingInterrupts } from '../../plane/db/schema.js';
import {
  decisionFeed,
  decisionOf,
  feedCursor,
  feedWaiters,
  listPauses,
  recordDecision,
  waitForDecisions,
} from '../../plane/decisions.js';
import { FEED_RECHECK_MS, feedSignal } from '../../plane/long-poll.js';
import { HttpError } from '../../plane/http/errors.js';
import { rowsOf } from '../../plane/db/open.js';
import { ingestBatch } from '../../plane/ingest.js';
import { restorePage } from '../../plane/restore.js';
import { uuidv7 } from '../../shared/ids.js';
import type { Decision, OutboxEvent } from '../../shared/rows.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('decisions on postgres');

/** What a refused call threw: its status, code, message and details. */
async function refusal(p: Promise<unknown>) {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HttpError);
  const h = e as HttpError;
  return { status: h.status, code: h.code, message: h.message, details: h.details };
}

function decisionSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`decisions on ${name}`, () => {
    let database: PlaneDatabase;
    let project = '';
    let other = '';
    const db = () => database.db;
    const ingest = async (rows: unknown[], writerId = 'laptop-a', projectId = project) =>
      ingestBatch(db(), projectId, writerId, undefined, rows);
    /** A run paused on a laptop and synced: its pause's checkpoint id. */
    const paused = async (executionId: string, writerId = 'laptop-a', context: unknown = { amount: 120 }) => {
      let checkpointId = '';
      const rows = await eventsOf(async (s) => {
        await s.put(step(executionId, 0));
        checkpointId = (
          await s.recordInterrupt(pause(executionId, 1), { reason: 'approve refund', context: context as never })
        ).checkpoint.id;
      }, writerId);
      expect((await ingest(rows, writerId)).rejected).toBe(0);
      return checkpointId;
    };
    const count = async () =>
      rowsOf<{ n: number }>(await db().execute(sql`SELECT count(*)::int AS n FROM decisions`))[0].n;
    const claimed = (
      executionId: string,
      checkpointId: string,
      writerId: string,
      decisionId?: string,
    ): OutboxEvent => ({
      kind: 'interrupt_claimed',
      id: uuidv7(),
      executionId,
      checkpointId,
      writerId,
      claimedAt: new Date().toISOString(),
      ...(decisionId ? { decisionId } : {}),
    });
    const decisionEvent = (d: Decision): OutboxEvent => ({ kind: 'decision_recorded', id: d.decisionId, row: d });
    const local = (executionId: string, checkpointId: string, o: Partial<Decision> = {}): Decision => ({
      decisionId: uuidv7(),
      executionId,
      checkpointId,
      approved: true,
      metadata: { comment: 'ok from the laptop' },
      decidedBy: 'ana@laptop',
      source: 'local',
      decidedAt: new Date().toISOString(),
      ...o,
    });

    beforeAll(async () => {
      database = await openTestPlaneDatabase(kind());
      project = (await createKey(database.db, { project: 'alpha', scopes: ['approve'], createProject: true }))
        .projectId;
      other = (await createKey(database.db, { project: 'beta', scopes: ['approve'], createProject: true })).projectId;
    });
    afterAll(async () => database?.close());

    it('records one decision per open pause (comment into metadata); a second is refused naming the first, and nothing changes', async () => {
      const cp = await paused('rec-1');
      const d = await recordDecision(
        db(),
        project,
        'rec-1',
        { checkpointId: cp, approved: true, metadata: { ticket: 7 }, comment: 'refund is fine' },
        'manager-key',
      );
      expect(d).toMatchObject({
        executionId: 'rec-1',
        checkpointId: cp,
        approved: true,
        metadata: { ticket: 7, comment: 'refund is fine' },
        decidedBy: 'manager-key',
        source: 'plane',
        state: 'pending',
        appliedBy: null,
        appliedAt: null,
      });
      const before = await count();
      const second = await refusal(
        recordDecision(db(), project, 'rec-1', { checkpointId: cp, approved: false }, 'someone-else'),
      );
      expect(second).toMatchObject({
        status: 409,
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: d.decisionId, decidedBy: 'manager-key', approved: true } },
      });
      expect(second.message).toContain("'manager-key'");
      expect(await count()).toBe(before);
      expect(await decisionOf(db(), project, 'rec-1', cp)).toEqual(d);
    });

    it('bad input names every problem (unknown fields, wrong types, comment given twice) and stores nothing', async () => {
      const cp = await paused('bad-1');
      const before = await count();
      const a = await refusal(
        recordDecision(
          db(),
          project,
          'bad-1',
          { checkpointId: cp, approved: 'yes', metadata: [], amount: 5, extra: true },
          'k',
        ),
      );
      expect(a).toMatchObject({ status: 400, code: 'INVALID_DECISION' });
      for (const bit of ["unknown field 'amount'", "unknown field 'extra'", 'approved:', 'metadata:'])
        expect(a.message).toContain(bit);
      expect((a.details as { problems: string[] }).problems.length).toBe(4);
      const b = await refusal(
        recordDecision(db(), project, 'bad-1', { checkpointId: 'not-a-uuid', approved: true, comment: 5 }, 'k'),
      );
      expect(b.message).toContain('checkpointId:');
      expect(b.message).toContain('comment:');
      const c = await refusal(
        recordDecision(
          db(),
          project,
          'bad-1',
          { checkpointId: cp, approved: true, metadata: { comment: 'a' }, comment: 'b' },
          'k',
        ),
      );
      expect(c.message).toContain('given twice');
      expect(await count()).toBe(before);
      expect(await decisionOf(db(), project, 'bad-1', cp)).toBeNull();
    });

    it("a pause that is not on the plane, not this run's open pause, or of another project is PAUSE_NOT_FOUND", async () => {
      const cp = await paused('nf-1');
      expect(
        await refusal(recordDecision(db(), project, 'nf-1', { checkpointId: uuidv7(), approved: true }, 'k')),
      ).toMatchObject({ status: 404, code: 'PAUSE_NOT_FOUND', details: { openPause: cp } });
      expect(
        (await refusal(recordDecision(db(), project, 'nobody', { checkpointId: cp, approved: true }, 'k'))).code,
      ).toBe('PAUSE_NOT_FOUND');
      expect(
        (await refusal(recordDecision(db(), other, 'nf-1', { checkpointId: cp, approved: true }, 'k'))).status,
      ).toBe(404);
      expect(await decisionOf(db(), project, 'nf-1', cp)).toBeNull();
      expect(await decisionOf(db(), other, 'nf-1', cp)).toBeNull();
    });

    it('a pause claimed, cancelled or deleted is PAUSE_CLOSED saying by whom', async () => {
      const c1 = await paused('closed-1');
      expect((await claimPause(db(), project, 'closed-1', c1, 'laptop-b')).won).toBe(true);
      const r1 = await refusal(recordDecision(db(), project, 'closed-1', { checkpointId: c1, approved: true }, 'k'));
      expect(r1).toMatchObject({
        status: 409,
        code: 'PAUSE_CLOSED',
        details: { claimedBy: 'laptop-b', source: 'api' },
      });
      expect(r1.message).toContain("claimed by writer 'laptop-b'");

      let c2 = '';
      const rows = await eventsOf(async (s) => {
        c2 = (await s.recordInterrupt(pause('closed-2'), { reason: 'r', context: null })).checkpoint.id;
        await s.cancel('closed-2', { reason: 'withdrawn' });
      }, 'laptop-c');
      await ingest(rows, 'laptop-c');
      const r2 = await refusal(recordDecision(db(), project, 'closed-2', { checkpointId: c2, approved: true }, 'k'));
      expect(r2).toMatchObject({ code: 'PAUSE_CLOSED', details: { source: 'cancel', claimedBy: 'laptop-c' } });
      expect(r2.message).toContain('cancelled');

      const c3 = await paused('closed-3');
      await ingest([
        { kind: 'execution_deleted', id: uuidv7(), executionId: 'closed-3', deletedAt: new Date().toISOString() },
      ]);
      const r3 = await refusal(recordDecision(db(), project, 'closed-3', { checkpointId: c3, approved: true }, 'k'));
      expect(r3).toMatchObject({ code: 'PAUSE_CLOSED', details: { source: 'delete' } });
      expect(r3.message).toContain('deleted');
    });

    it("a decision's state follows its pause's claim: claimed with it, applied by its writer; superseded by a resume from code, a cancel, a deletion", async () => {
      const cp = await paused('st-1');
      const d = await recordDecision(db(), project, 'st-1', { checkpointId: cp, approved: true }, 'k');
      expect((await claimPause(db(), project, 'st-1', cp, 'laptop-a', 0, d.decisionId)).won).toBe(true);
      expect(await decisionOf(db(), project, 'st-1', cp)).toMatchObject({ state: 'claimed', appliedBy: 'laptop-a' });
      await ingest([claimed('st-1', cp, 'laptop-a', d.decisionId)]);
      const applied = await decisionOf(db(), project, 'st-1', cp);
      expect(applied).toMatchObject({ state: 'applied', appliedBy: 'laptop-a' });
      expect(applied!.appliedAt).not.toBeNull();

      const cp2 = await paused('st-2');
      await recordDecision(db(), project, 'st-2', { checkpointId: cp2, approved: false }, 'k');
      await ingest([claimed('st-2', cp2, 'laptop-b')], 'laptop-b');
      expect(await decisionOf(db(), project, 'st-2', cp2)).toMatchObject({
        state: 'superseded',
        appliedBy: 'laptop-b',
      });

      // the holder's retry of a claim made before it knew the decision records it once
      const cp3 = await paused('st-3');
      const d3 = await recordDecision(db(), project, 'st-3', { checkpointId: cp3, approved: true }, 'k');
      await claimPause(db(), project, 'st-3', cp3, 'laptop-a');
      expect((await decisionOf(db(), project, 'st-3', cp3))!.state).toBe('superseded');
      await claimPause(db(), project, 'st-3', cp3, 'laptop-a', 0, d3.decisionId);
      expect((await decisionOf(db(), project, 'st-3', cp3))!.state).toBe('claimed');

      let cp4 = '';
      const cancelRows = await eventsOf(async (s) => {
        cp4 = (await s.recordInterrupt(pause('st-4'), { reason: 'r', context: null })).checkpoint.id;
      }, 'laptop-d');
      await ingest(cancelRows, 'laptop-d');
      await recordDecision(db(), project, 'st-4', { checkpointId: cp4, approved: true }, 'k');
      await ingest(
        [
          {
            kind: 'interrupt_closed',
            id: uuidv7(),
            executionId: 'st-4',
            checkpointId: cp4,
            writerId: 'laptop-d',
            closedAt: new Date().toISOString(),
          } as OutboxEvent,
        ],
        'laptop-d',
      );
      expect((await decisionOf(db(), project, 'st-4', cp4))!.state).toBe('superseded');

      const cp5 = await paused('st-5');
      await recordDecision(db(), project, 'st-5', { checkpointId: cp5, approved: true }, 'k');
      await ingest([
        { kind: 'execution_deleted', id: uuidv7(), executionId: 'st-5', deletedAt: new Date().toISOString() },
      ]);
      expect((await decisionOf(db(), project, 'st-5', cp5))!.state).toBe('superseded');
    });

    it('ingest: a local decision is stored (also before its pause arrives); a second for the same pause keeps the first, is reported dropped, not quarantined; a plane-sourced one is refused', async () => {
      const cp = await paused('in-1');
      const first = local('in-1', cp);
      const a = await ingest([{ kind: 'decision_recorded', id: first.decisionId, row: first }]);
      expect(a).toMatchObject({ accepted: 1, rejected: 0, decisions: { stored: 1, dropped: [] } });
      expect(await decisionOf(db(), project, 'in-1', cp)).toMatchObject({
        decisionId: first.decisionId,
        source: 'local',
        decidedBy: 'ana@laptop',
        state: 'pending',
      });
      const again = await ingest([{ kind: 'decision_recorded', id: first.decisionId, row: first }]);
      expect(again).toMatchObject({ duplicate: 1, decisions: { stored: 0 } });
      const second = local('in-1', cp, { approved: false, decidedBy: 'bo@desktop' });
      const b = await ingest([{ kind: 'decision_recorded', id: second.decisionId, row: second }], 'laptop-b');
      expect(b).toMatchObject({
        accepted: 1,
        rejected: 0,
        decisions: {
          stored: 0,
          dropped: [{ decision: { decisionId: second.decisionId }, first: { decisionId: first.decisionId } }],
        },
      });
      expect((await decisionOf(db(), project, 'in-1', cp))!.decisionId).toBe(first.decisionId);

      // the decision in an earlier batch than its pause (the pause was refused once and resent, say)
      let cp2 = '';
      const rows = await eventsOf(async (s) => {
        cp2 = (await s.recordInterrupt(pause('in-2'), { reason: 'r', context: null })).checkpoint.id;
      });
      const early = local('in-2', cp2);
      expect((await ingest([{ kind: 'decision_recorded', id: early.decisionId, row: early }])).decisions.stored).toBe(
        1,
      );
      await ingest(rows);
      expect(await decisionOf(db(), project, 'in-2', cp2)).toMatchObject({
        decisionId: early.decisionId,
        state: 'pending',
      });
      expect((await restorePage(db(), project, 'in-2', { limit: 10 })).decision).toEqual(early);

      const forged = local('in-1', cp, { source: 'plane' });
      const c = await ingest([{ kind: 'decision_recorded', id: forged.decisionId, row: forged }]);
      expect(c.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });
      expect(c.results[0].status === 'rejected' && c.results[0].reason).toContain('source');
    });

    it('the inbox lists unanswered pauses in the order they opened (a DB sequence, not their clocks), claimed-and-held ones as claimed, applied ones gone; paged', async () => {
      const p = await createKey(db(), { project: 'inbox', scopes: ['approve'], createProject: true });
      const mk = async (id: string, createdAt: string) => {
        let cp = '';
        const rows = await eventsOf(async (s) => {
          cp = (await s.recordInterrupt(pause(id), { reason: `approve ${id}`, context: { id } })).checkpoint.id;
        });
        for (const r of rows) if (r.kind === 'interrupt_opened') r.row.createdAt = createdAt;
        expect((await ingest(rows, 'w', p.projectId)).rejected).toBe(0);
        return cp;
      };
      // opened in this order; their writers' clocks say the opposite
      const late = await mk('inbox-late-clock', '2030-01-01T00:00:00.000Z');
      const early = await mk('inbox-early-clock', '2020-01-01T00:00:00.000Z');
      const third = await mk('inbox-third', '2025-01-01T00:00:00.000Z');
      const fourth = await mk('inbox-fourth', '2025-01-01T00:00:00.000Z');
      await recordDecision(db(), p.projectId, 'inbox-early-clock', { checkpointId: early, approved: true }, 'k');
      await claimPause(db(), p.projectId, 'inbox-third', third, 'laptop-x');
      await ingestBatch(db(), p.projectId, 'laptop-y', undefined, [claimed('inbox-fourth', fourth, 'laptop-y')]);
      const all = await listPauses(db(), p.projectId, { limit: 100 });
      expect(all.items.map((i) => [i.executionId, i.state])).toEqual([
        ['inbox-late-clock', 'open'],
        ['inbox-early-clock', 'open'],
        ['inbox-third', 'claimed'],
      ]);
      expect(all.items[0]).toMatchObject({
        checkpointId: late,
        reason: 'approve inbox-late-clock',
        context: { id: 'inbox-late-clock' },
        decision: null,
        ageMs: 0,
      });
      expect(all.items[1].ageMs).toBeGreaterThan(5 * 365 * 86_400_000);
      expect(all.items[1].decision).toMatchObject({ state: 'pending', decidedBy: 'k' });
      const seen: string[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await listPauses(db(), p.projectId, { cursor, limit: 1 });
        seen.push(...page.items.map((i) => i.executionId));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(all.items.map((i) => i.executionId));
      expect((await listPauses(db(), project, { limit: 1000 })).items.map((i) => i.executionId)).not.toContain(
        'inbox-late-clock',
      );
    });

    it('the feed pages decisions in recording order by cursor; the long poll answers at once, wakes on a recording, or answers empty with the same cursor', async () => {
      const p = await createKey(db(), { project: 'feed', scopes: ['approve'], createProject: true });
      const start = Number((await decisionFeed(db(), p.projectId, 0, 1000)).nextCursor);
      expect(start).toBe(0);
      const cps: string[] = [];
      const pauseOf = async (projectId: string, id: string) => {
        let cp = '';
        const rows = await eventsOf(async (s) => {
          cp = (await s.recordInterrupt(pause(id), { reason: 'r', context: null })).checkpoint.id;
        });
        await ingestBatch(db(), projectId, 'w', undefined, rows);
        return cp;
      };
      for (const id of ['feed-1', 'feed-2', 'feed-3']) cps.push(await pauseOf(p.projectId, id));
      await recordDecision(db(), p.projectId, 'feed-2', { checkpointId: cps[1], approved: true }, 'k');
      await recordDecision(db(), p.projectId, 'feed-1', { checkpointId: cps[0], approved: false }, 'k');
      const one = await decisionFeed(db(), p.projectId, 0, 1);
      expect(one.items.map((i) => i.executionId)).toEqual(['feed-2']);
      const rest = await decisionFeed(db(), p.projectId, Number(one.nextCursor), 10);
      expect(rest.items.map((i) => i.executionId)).toEqual(['feed-1']);
      const cursor = Number(rest.nextCursor);
      const t0 = performance.now();
      const empty = await waitForDecisions(db(), p.projectId, cursor, 10, 300);
      expect(empty).toEqual({ items: [], nextCursor: String(cursor) });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
      // a recording in this process wakes the poll, not its once-a-second recheck of the database: proven when no
      // recheck of this project ran between the recording and the wake (a loaded machine may run one: then again, with another run)
      let rechecks = 0;
      const onRecheck = (projectId: string) => void (projectId === p.projectId && rechecks++);
      feedSignal(db()).on('decisions:max', onRecheck);
      let woke: Awaited<ReturnType<typeof waitForDecisions>> | null = null;
      let tries = 0;
      try {
        for (let at = cursor; tries < 5; tries++) {
          const id = tries === 0 ? 'feed-3' : `feed-3-${tries}`;
          const cp = tries === 0 ? cps[2] : await pauseOf(p.projectId, id);
          const waiting = waitForDecisions(db(), p.projectId, at, 10, 20_000);
          await until('the poll waits', () => feedWaiters(db()).polls === 1);
          rechecks = 0;
          await recordDecision(db(), p.projectId, id, { checkpointId: cp, approved: true }, 'k');
          const page = await waiting;
          expect(page.items.map((i) => i.executionId)).toEqual([id]);
          if (rechecks === 0) {
            woke = page;
            break;
          }
          at = Number(page.nextCursor);
        }
      } finally {
        feedSignal(db()).off('decisions:max', onRecheck);
      }
      expect(woke, `in ${tries} tries, a database recheck ran before every wake`).not.toBeNull();
      if (!woke) return;
      // a hung-up client stops the wait
      const ac = new AbortController();
      const held = waitForDecisions(db(), p.projectId, Number(woke.nextCursor), 10, 20_000, ac.signal);
      await until('the held poll waits', () => feedWaiters(db()).polls === 1);
      ac.abort();
      expect((await held).items).toEqual([]);
      // nothing of a poll outlives it: no listener, no recheck timer
      expect(feedWaiters(db())).toEqual({ polls: 0, listeners: 0, timers: 0 });
    });

    it('the feed cursor is a safe integer: a larger one is refused (400 BAD_CURSOR naming the limit), never rounded', () => {
      expect(feedCursor(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
      for (const bad of ['9007199254740992', '9007199254740993', '99999999999999999', '123456789012345678']) {
        let e: unknown = null;
        try {
          feedCursor(bad);
        } catch (err) {
          e = err;
        }
        expect(e, bad).toBeInstanceOf(HttpError);
        expect((e as HttpError).status).toBe(400);
        expect((e as HttpError).code).toBe('BAD_CURSOR');
      }
    });

    it("an ingested decision naming another run's checkpoint is refused (invalid, quarantined); one of a pause not yet known holds its key: the real pause's decision is ALREADY_DECIDED, never shown on the real run", async () => {
      const cp = await paused('mm-1');
      await paused('mm-2');
      const wrong = local('mm-2', cp);
      const r = await ingest([decisionEvent(wrong)]);
      expect(r.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });
      expect(r.results[0].status === 'rejected' && r.results[0].reason).toContain("belongs to execution 'mm-1'");
      const q = rowsOf<{ n: number }>(
        await db().execute(
          sql`SELECT count(*)::int AS n FROM quarantine WHERE project_id = ${project} AND row_id = ${wrong.decisionId} AND code = 'invalid'`,
        ),
      );
      expect(q[0].n).toBe(1);
      expect(await decisionOf(db(), project, 'mm-1', cp)).toBeNull();
      expect(await decisionOf(db(), project, 'mm-2', cp)).toBeNull();
      expect((await recordDecision(db(), project, 'mm-1', { checkpointId: cp, approved: true }, 'k')).state).toBe(
        'pending',
      );

      // the pause not on the plane when the mismatched decision came: it takes the key; the run's own pause then arrives
      let cp3 = '';
      const rows = await eventsOf(async (s) => {
        cp3 = (await s.recordInterrupt(pause('mm-3'), { reason: 'r', context: null })).checkpoint.id;
      });
      const early = local('mm-4', cp3);
      expect((await ingest([decisionEvent(early)])).decisions.stored).toBe(1);
      await ingest(rows);
      // the run's own view shows no decision (not another run's)
      expect(await decisionOf(db(), project, 'mm-3', cp3)).toBeNull();
      const pauses = await listPauses(db(), project, { limit: 1000 });
      expect(pauses.items.find((p) => p.checkpointId === cp3)).toMatchObject({ decision: null });
      // and a decision for it is refused 409 naming the holder (not a 404 forever)
      const refused = await refusal(recordDecision(db(), project, 'mm-3', { checkpointId: cp3, approved: true }, 'k'));
      expect(refused).toMatchObject({
        status: 409,
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: early.decisionId, executionId: 'mm-4' } },
      });
      expect(refused.message).toContain("recorded for execution 'mm-4'");
      // a run with no such pause (a checkpoint id of another run, decided there) is told its pause is not there, not that run's decision
      const elsewhere = await refusal(
        recordDecision(db(), project, 'mm-9', { checkpointId: cp3, approved: true }, 'k'),
      );
      expect(elsewhere).toMatchObject({ status: 404, code: 'PAUSE_NOT_FOUND' });
      expect(JSON.stringify(elsewhere)).not.toContain(early.decisionId);
    });
  });
}

decisionSuite('pglite', () => 'pglite');

describe.skipIf(!pg)('decisions on postgres', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_decisions');
  });
  afterAll(async () => tdb?.drop());
  decisionSuite('postgres', () => ({ url: tdb.url }));

  it("long polls in one plane process wake on another process's recording (one shared database recheck), within about a second", async () => {
    const a = await openTestPlaneDatabase({ url: tdb.url });
    const b = await openTestPlaneDatabase({ url: tdb.url });
    try {
      const p = await createKey(a.db, { project: 'two-procs', scopes: ['approve'], createProject: true });
      let cp = '';
      const rows = await eventsOf(async (s) => {
        cp = (await s.recordInterrupt(pause('two-1'), { reason: 'r', context: null })).checkpoint.id;
      });
      await ingestBatch(a.db, p.projectId, 'w', undefined, rows);
      const after = Number((await decisionFeed(a.db, p.projectId, 0, 1000)).nextCursor);
      // many polls waiting at once share one recheck of the database; each is woken
      const answeredAt: number[] = [];
      const waiting = Array.from({ length: 12 }, () =>
        waitForDecisions(a.db, p.projectId, after, 10, 20_000).then(
          (page) => (answeredAt.push(performance.now()), page),
        ),
      );
      await until('the 12 polls wait', () => feedWaiters(a.db).polls === 12);
      expect(feedWaiters(a.db).timers).toBe(1);
      await recordDecision(b.db, p.projectId, 'two-1', { checkpointId: cp, approved: true }, 'other-process');
      const recordedAt = performance.now();
      for (const page of await Promise.all(waiting))
        expect(page.items.map((i) => i.decidedBy)).toEqual(['other-process']);
      // "within about a second" (one shared recheck, FEED_RECHECK_MS), not left to the polls' 20 s wait: bounded by the
      // plane's own intervals with a wide margin, from the recording's commit: 10 rechecks, half the wait. A loaded
      // machine delays a recheck by a second or two, not by ten; a recheck that never wakes the polls leaves them to their wait
      expect(Math.max(...answeredAt) - recordedAt, 'ms from the commit to the last poll answering').toBeLessThan(
        10 * FEED_RECHECK_MS,
      );
      expect(feedWaiters(a.db)).toEqual({ polls: 0, listeners: 0, timers: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  });
  /** Runs paused and synced in a project: their ids and pauses' checkpoint ids. */
  async function pausedRuns(db: PlaneDatabase['db'], projectId: string, prefix: string, n: number) {
    const pauses: { id: string; cp: string }[] = [];
    const rows: OutboxEvent[] = [];
    for (let i = 0; i < n; i++) {
      const id = `${prefix}-${i}`;
      rows.push(
        ...(await eventsOf(async (s) => {
          pauses.push({ id, cp: (await s.recordInterrupt(pause(id), { reason: 'r', context: null })).checkpoint.id });
        })),
      );
    }
    expect((await ingestBatch(db, projectId, 'w', undefined, rows)).rejected).toBe(0);
    return pauses;
  }
  const localDecision = (executionId: string, checkpointId: string): OutboxEvent => {
    const d: Decision = {
      decisionId: uuidv7(),
      executionId,
      checkpointId,
      approved: true,
      metadata: {},
      decidedBy: 'ana@laptop',
      source: 'local',
      decidedAt: new Date().toISOString(),
    };
    return { kind: 'decision_recorded', id: d.decisionId, row: d };
  };

  it('concurrent recordings and ingests on separate connections and plane processes: a reader following the feed at the same time sees every decision exactly once, in increasing feed order', async () => {
    const a = await openTestPlaneDatabase({ url: tdb.url });
    const b = await openTestPlaneDatabase({ url: tdb.url });
    const r = await openTestPlaneDatabase({ url: tdb.url });
    try {
      const p = await createKey(a.db, { project: 'race', scopes: ['approve'], createProject: true });
      const pauses = await pausedRuns(a.db, p.projectId, 'race', 64);
      const seen: number[] = [];
      let done = false;
      const reader = (async () => {
        let after = 0;
        for (;;) {
          const page = await waitForDecisions(r.db, p.projectId, after, 3, 100);
          seen.push(...page.items.map((i) => i.feedSeq));
          after = Number(page.nextCursor);
          if (done && !page.items.length) break;
        }
      })();
      // two processes, each with a pool of connections: recordings and ingests commit in any order
      await Promise.all(
        pauses.map(({ id, cp }, i) =>
          i % 2
            ? recordDecision(i % 4 === 1 ? a.db : b.db, p.projectId, id, { checkpointId: cp, approved: true }, 'k')
            : ingestBatch(i % 4 === 0 ? b.db : a.db, p.projectId, `w${i}`, undefined, [localDecision(id, cp)]),
        ),
      );
      done = true;
      await reader;
      const all = (await decisionFeed(r.db, p.projectId, 0, 1000)).items.map((i) => i.feedSeq);
      expect(all.length).toBe(pauses.length);
      expect(seen).toEqual(all);
      expect(new Set(seen).size).toBe(pauses.length);
    } finally {
      await a.close();
      await b.close();
      await r.close();
    }
  });

  it('a claim committing while a decision is recorded: the recording waits for the pause row, then refuses PAUSE_CLOSED (never a pending decision on a claimed pause)', async () => {
    const a = await openTestPlaneDatabase({ url: tdb.url });
    const b = await openTestPlaneDatabase({ url: tdb.url });
    let release = () => {};
    try {
      const p = await createKey(a.db, { project: 'lock', scopes: ['approve'], createProject: true });
      const [{ id, cp }] = await pausedRuns(a.db, p.projectId, 'lock', 1);
      const gate = new Promise<void>((res) => {
        release = res;
      });
      let wrote!: () => void;
      const written = new Promise<void>((res) => {
        wrote = res;
      });
      // claimPause's writes (the claim row, then the pause row it updates), held open in another process
      const claiming = b.db.transaction(async (tx) => {
        await tx.insert(claims).values({
          projectId: p.projectId,
          checkpointId: cp,
          executionId: id,
          writerId: 'laptop-z',
          source: 'api',
          decisionId: null,
        });
        await tx
          .update(pendingInterrupts)
          .set({ state: 'claimed', claimedBy: 'laptop-z', claimedAt: new Date() })
          .where(and(eq(pendingInterrupts.projectId, p.projectId), eq(pendingInterrupts.checkpointId, cp)));
        wrote();
        await gate;
      });
      await written;
      let settled = false;
      const recording = recordDecision(a.db, p.projectId, id, { checkpointId: cp, approved: true }, 'k').then(
        (v) => v,
        (e: unknown) => e,
      );
      void recording.then(() => {
        settled = true;
      });
      const lockWaits = async () =>
        rowsOf<{ n: number }>(
          await a.db.execute(
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          ),
        )[0].n;
      await until('the recording answers or waits on a row lock', async () => settled || (await lockWaits()) > 0);
      release();
      await claiming;
      const out = await recording;
      expect(out).toBeInstanceOf(HttpError);
      expect(out).toMatchObject({ status: 409, code: 'PAUSE_CLOSED', details: { claimedBy: 'laptop-z' } });
      expect(await decisionOf(a.db, p.projectId, id, cp)).toBeNull();
    } finally {
      release();
      await a.close();
      await b.close();
    }
  });
});
