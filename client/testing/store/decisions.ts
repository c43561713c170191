/**
 * The decisions part of the store contract, run per backend by
 * runStoreSuite. Two handles on one store stand for two processes. A
 * decision's state is derived (never stored): these tests move the pause
 * (claim, cancel, delete) and read the state back.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import { uuidv7 } from '../../../shared/ids.js';
import type { Decision, OutboxEvent } from '../../../shared/rows.js';
import type { WaymarkError } from '../../../shared/errors.js';
import { contractTest, expectCode, input, pauseRow, withTwoHandles, type StoreSuiteOptions } from './suite.js';

let n = 0;
const exec = () => `decide-${Date.now().toString(36)}-${++n}`;

/** A local decision approving the pause at `checkpointId` of `executionId`. */
export function decisionFor(executionId: string, checkpointId: string, over: Partial<Decision> = {}): Decision {
  return {
    decisionId: uuidv7(),
    executionId,
    checkpointId,
    approved: true,
    metadata: { comment: 'ok by the manager' },
    decidedBy: 'manager@example.com',
    source: 'local',
    decidedAt: new Date().toISOString(),
    ...over,
  };
}

/** A run paused at a fresh pause; its `interrupted` checkpoint id. */
async function paused(store: Checkpointer, id = exec()): Promise<{ id: string; pause: string }> {
  await store.put(input(id));
  const { checkpoint } = await store.recordInterrupt(pauseRow(id), {
    reason: 'approve the refund',
    context: { amount: 40 },
  });
  return { id, pause: checkpoint.id };
}

/** Every unsynced outbox event of `kind`. */
async function events(store: Checkpointer, kind: OutboxEvent['kind']): Promise<OutboxEvent[]> {
  const all = await store.fetchUnsynced({ limit: 10_000, maxBytes: Number.MAX_SAFE_INTEGER });
  return all.filter((e) => e.kind === kind).map((e) => e.event!);
}

const resumedRow = (id: string, prevId: string) =>
  input(id, {
    prevId,
    nodeId: 'turn:0/tool:refund',
    step: 'tool_call',
    status: 'completed',
    agentPath: 'agent:test/tool:refund',
  });

export function runDecisionSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}: decisions`, () => {
    let a: Checkpointer;
    let b: Checkpointer;
    withTwoHandles(options, (pair) => ({ a, b } = pair));

    test("the plane's decision takes the place of a local one not applied (the plane settles which is first); not of one applied here, nor of another plane decision", async () => {
      const { id, pause } = await paused(a);
      const mine = decisionFor(id, pause, { decidedBy: 'erin' });
      await a.recordDecision(mine);
      const first = decisionFor(id, pause, { source: 'plane', approved: false, decidedBy: 'alice' });
      expect(await b.recordDecision(first)).toEqual({ recorded: true, replaced: mine });
      expect(await a.getDecision(id, pause)).toMatchObject({
        decisionId: first.decisionId,
        source: 'plane',
        approved: false,
        state: 'pending',
      });
      expect((await a.listDecisions({ executionId: id })).items.map((d) => d.decisionId)).toEqual([first.decisionId]);
      // a claim applying the replaced one (read before it was replaced) is refused naming the first; nothing claimed
      const open = (await a.getPendingInterrupt(id))!;
      const refused = await a.claimInterrupt(open, { decisionId: mine.decisionId }).catch((e: WaymarkError) => e);
      expect(refused).toMatchObject({
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: first.decisionId } },
      });
      expect(await b.getPendingInterrupt(id)).toEqual(open);
      // another plane decision for the pause keeps the first
      expect(await a.recordDecision(decisionFor(id, pause, { source: 'plane' }))).toEqual({
        recorded: false,
        existing: first,
      });
      // a local decision applied here (its claim took the pause) stays, whatever the plane says later
      const other = await paused(a);
      const applied = decisionFor(other.id, other.pause);
      await a.recordDecision(applied);
      const pending = (await a.getPendingInterrupt(other.id))!;
      await a.claimInterrupt(pending, { decisionId: applied.decisionId });
      expect(await b.recordDecision(decisionFor(other.id, other.pause, { source: 'plane', approved: false }))).toEqual({
        recorded: false,
        existing: applied,
      });
      expect(await a.getDecision(other.id, other.pause)).toMatchObject({
        decisionId: applied.decisionId,
        state: 'applied',
      });
    });

    test("a local decision and the plane's recorded at once from two handles: the pause ends with the plane's, every time", async () => {
      for (let i = 0; i < 12; i++) {
        const { id, pause } = await paused(a);
        const local = decisionFor(id, pause, { decidedBy: 'local' });
        const plane = decisionFor(id, pause, { source: 'plane', approved: false, decidedBy: 'plane' });
        const [rl, rp] = await Promise.all(
          i % 2
            ? [a.recordDecision(local), b.recordDecision(plane)]
            : [b.recordDecision(local), a.recordDecision(plane)],
        );
        expect(rp.recorded, JSON.stringify([rl, rp])).toBe(true);
        expect(await a.getDecision(id, pause)).toMatchObject({ decisionId: plane.decisionId, source: 'plane' });
      }
    });

    test('a local decision for an open pause is recorded with its decision_recorded event in one transaction; it reads back pending', async () => {
      const { id, pause } = await paused(a);
      const d = decisionFor(id, pause);
      expect(await a.recordDecision(d)).toEqual({ recorded: true });
      const [ev] = await events(b, 'decision_recorded');
      expect(ev).toEqual({ kind: 'decision_recorded', id: d.decisionId, row: d });
      expect(await b.getDecision(id, pause)).toEqual({
        ...d,
        state: 'pending',
        appliedBy: null,
        appliedAt: null,
        held: true,
        seq: expect.any(Number),
      });
      const page = await b.listDecisions();
      expect(page.items.map((x) => x.decisionId)).toEqual([d.decisionId]);
      expect(page.nextCursor).toBeNull();
      expect(await b.getDecision(id, uuidv7())).toBeNull();
    });

    test('a second local decision for the same pause is not recorded: the first is returned and kept, nothing queued (also from another handle, and a retried same id)', async () => {
      const { id, pause } = await paused(a);
      const first = decisionFor(id, pause);
      await a.recordDecision(first);
      const second = decisionFor(id, pause, { approved: false, decidedBy: 'someone else' });
      expect(await b.recordDecision(second)).toEqual({ recorded: false, existing: first });
      expect(await a.recordDecision(first)).toEqual({ recorded: false, existing: first });
      // (the plane's decision takes a local one's place: see "the plane's decision takes the place of a local one not applied")
      expect((await events(a, 'decision_recorded')).length).toBe(1);
      expect((await a.getDecision(id, pause))?.decisionId).toBe(first.decisionId);
    });

    test('two handles racing to decide one pause: exactly one decision is recorded, the other is told which', async () => {
      const { id, pause } = await paused(a);
      const da = decisionFor(id, pause, { decidedBy: 'a' });
      const db = decisionFor(id, pause, { decidedBy: 'b', approved: false });
      const [ra, rb] = await Promise.all([a.recordDecision(da), b.recordDecision(db)]);
      const won = [ra, rb].filter((r) => r.recorded);
      expect(won.length).toBe(1);
      const winner = ra.recorded ? da : db;
      const loser = ra.recorded ? rb : ra;
      expect(loser).toEqual({ recorded: false, existing: winner });
      expect((await events(a, 'decision_recorded')).map((e) => e.id)).toEqual([winner.decisionId]);
    });

    test('a local decision racing a claim of its pause: recorded before it (then superseded by it) or refused with PAUSE_CLOSED; never pending on a claimed pause', async () => {
      for (let i = 0; i < 5; i++) {
        const { id, pause } = await paused(a);
        const d = decisionFor(id, pause);
        const [recorded, claimed] = await Promise.allSettled([
          b.recordDecision(d),
          a.claimInterrupt({ executionId: id, checkpointId: pause }, { next: resumedRow(id, pause) }),
        ]);
        expect(claimed.status === 'fulfilled' && claimed.value !== null).toBe(true);
        if (recorded.status === 'fulfilled') {
          expect(recorded.value).toEqual({ recorded: true });
          expect(await a.getDecision(id, pause)).toMatchObject({ state: 'superseded', appliedBy: a.writerId });
        } else {
          expect((recorded.reason as { code?: string }).code).toBe('PAUSE_CLOSED');
          expect(await a.getDecision(id, pause)).toBeNull();
        }
      }
    });

    test('a bad decision is refused with INVALID_DECISION naming every problem; nothing is recorded', async () => {
      const { id, pause } = await paused(a);
      let err: { code?: string; details?: { problems: string[] } } | undefined;
      const bad = {
        ...decisionFor(id, pause),
        approved: 'yes',
        metadata: 'none',
        extra: 1,
        checkpointId: 'not-a-uuid',
      } as unknown as Decision;
      await a.recordDecision(bad).catch((e) => (err = e));
      expect(err?.code).toBe('INVALID_DECISION');
      const problems = err!.details!.problems.join(' | ');
      for (const what of ["unknown field 'extra'", 'approved', 'metadata', 'checkpointId'])
        expect(problems).toContain(what);
      await expectCode(a.recordDecision({ ...decisionFor(id, pause), decidedBy: '' }), 'INVALID_DECISION');
      expect((await a.listDecisions()).items).toEqual([]);
      expect(await events(a, 'decision_recorded')).toEqual([]);
    });

    test('a local decision needs the pause open here: PAUSE_NOT_FOUND for no such pause, PAUSE_CLOSED naming the claim or the cancel', async () => {
      const { id, pause } = await paused(a);
      await expectCode(a.recordDecision(decisionFor(id, uuidv7())), 'PAUSE_NOT_FOUND');
      await expectCode(a.recordDecision(decisionFor(exec(), pause)), 'PAUSE_NOT_FOUND');
      const first = (await a.list(id))[0];
      await expectCode(a.recordDecision(decisionFor(id, first.id)), 'PAUSE_NOT_FOUND');
      await b.claimInterrupt({ executionId: id, checkpointId: pause }, { next: resumedRow(id, pause) });
      let err: { code?: string; message?: string; details?: Record<string, unknown> } | undefined;
      await a.recordDecision(decisionFor(id, pause)).catch((e) => (err = e));
      expect(err?.code).toBe('PAUSE_CLOSED');
      expect(err?.message).toContain(`claimed by writer '${b.writerId}'`);
      expect(err?.details).toMatchObject({
        executionId: id,
        checkpointId: pause,
        claimedBy: b.writerId,
        decisionId: null,
      });
      const other = await paused(a);
      await b.cancel(other.id, { reason: 'no longer needed' });
      await expectCode(a.recordDecision(decisionFor(other.id, other.pause)), 'PAUSE_CLOSED');
      expect((await a.listDecisions()).items).toEqual([]);
      expect(await events(a, 'decision_recorded')).toEqual([]);
    });

    test('a decision from the plane is stored even for a run this store does not hold, and queues nothing', async () => {
      const d = decisionFor('held-elsewhere', uuidv7(), { source: 'plane', decidedBy: 'key:approver' });
      expect(await a.recordDecision(d)).toEqual({ recorded: true });
      expect(await b.getDecision('held-elsewhere', d.checkpointId)).toMatchObject({
        ...d,
        state: 'pending',
        held: false,
      });
      expect(await events(a, 'decision_recorded')).toEqual([]);
    });

    test('forgetUnheldDecisions removes the plane decisions of a run not held here but the kept pause’s; never a decision whose pause row is held', async () => {
      const gone = decisionFor('moved-on', uuidv7(), { source: 'plane' });
      const kept = decisionFor('moved-on', uuidv7(), { source: 'plane' });
      const other = decisionFor('another-run', uuidv7(), { source: 'plane' });
      for (const d of [gone, kept, other]) await a.recordDecision(d);
      const held = await paused(a);
      const mine = decisionFor(held.id, held.pause);
      await a.recordDecision(mine);
      const upTo = await b.decisionSeq();
      expect(await b.forgetUnheldDecisions('moved-on', kept.checkpointId, upTo)).toBe(1);
      expect(await a.getDecision('moved-on', gone.checkpointId)).toBeNull();
      expect(await a.getDecision('moved-on', kept.checkpointId)).toMatchObject({
        decisionId: kept.decisionId,
        state: 'pending',
        held: false,
      });
      expect(await a.getDecision('another-run', other.checkpointId)).toMatchObject({ decisionId: other.decisionId });
      expect(await b.forgetUnheldDecisions('moved-on', null, upTo)).toBe(1);
      expect(await b.forgetUnheldDecisions('moved-on', null, upTo)).toBe(0);
      expect(await b.forgetUnheldDecisions(held.id, null, upTo)).toBe(0);
      expect(await a.getDecision(held.id, held.pause)).toMatchObject({
        decisionId: mine.decisionId,
        state: 'pending',
        held: true,
      });
      expect(await events(a, 'decision_recorded')).toHaveLength(1);
    });

    test('forgetUnheldDecisions never removes a decision recorded after the bound it is given (decisionSeq read before asking the plane)', async () => {
      const id = exec();
      const old = decisionFor(id, uuidv7(), { source: 'plane' });
      await a.recordDecision(old);
      const before = await b.decisionSeq();
      expect(before).toBe((await a.getDecision(id, old.checkpointId))!.seq);
      // recorded while the plane's (now stale) answer was on its way
      const fresh = decisionFor(id, uuidv7(), { source: 'plane' });
      await a.recordDecision(fresh);
      expect(await b.decisionSeq()).toBeGreaterThan(before);
      expect(await b.forgetUnheldDecisions(id, null, before)).toBe(1);
      expect(await a.getDecision(id, old.checkpointId)).toBeNull();
      expect(await a.getDecision(id, fresh.checkpointId)).toMatchObject({
        decisionId: fresh.decisionId,
        state: 'pending',
        held: false,
      });
    });

    test('a decision recorded after the bound is never forgotten, even when the newest decision was deleted in between (a seq is never given twice)', async () => {
      const gone = decisionFor(exec(), uuidv7(), { source: 'plane' });
      await a.recordDecision(gone);
      const bound = await b.decisionSeq();
      // another run's worker forgets the newest decision while this worker's question is on its way
      expect(await b.forgetUnheldDecisions(gone.executionId, null, bound)).toBe(1);
      const id = exec();
      const fresh = decisionFor(id, uuidv7(), { source: 'plane' });
      await a.recordDecision(fresh);
      expect((await a.getDecision(id, fresh.checkpointId))!.seq).toBeGreaterThan(bound);
      expect(await b.decisionSeq()).toBeGreaterThan(bound);
      expect(await b.forgetUnheldDecisions(id, null, bound)).toBe(0);
      expect(await a.getDecision(id, fresh.checkpointId)).toMatchObject({
        decisionId: fresh.decisionId,
        state: 'pending',
        held: false,
      });
    });

    test('a claim carrying the decision applies it (appliedBy, interrupt_claimed.decisionId); a claim without it supersedes it', async () => {
      const one = await paused(a);
      const d1 = decisionFor(one.id, one.pause);
      await a.recordDecision(d1);
      const claimed = await b.claimInterrupt(
        { executionId: one.id, checkpointId: one.pause },
        { next: resumedRow(one.id, one.pause), decisionId: d1.decisionId },
      );
      expect(claimed).not.toBeNull();
      const applied = await a.getDecision(one.id, one.pause);
      expect(applied).toMatchObject({ state: 'applied', appliedBy: b.writerId, appliedAt: expect.any(String) });
      const claimEvents = (await events(a, 'interrupt_claimed')) as Extract<
        OutboxEvent,
        { kind: 'interrupt_claimed' }
      >[];
      expect(claimEvents.find((e) => e.checkpointId === one.pause)).toMatchObject({
        decisionId: d1.decisionId,
        writerId: b.writerId,
        claimedAt: applied!.appliedAt,
      });

      const two = await paused(a);
      const d2 = decisionFor(two.id, two.pause);
      await a.recordDecision(d2);
      await a.claimInterrupt({ executionId: two.id, checkpointId: two.pause }, { next: resumedRow(two.id, two.pause) });
      expect(await b.getDecision(two.id, two.pause)).toMatchObject({ state: 'superseded', appliedBy: a.writerId });
      const plain = (
        (await events(a, 'interrupt_claimed')) as Extract<OutboxEvent, { kind: 'interrupt_claimed' }>[]
      ).find((e) => e.checkpointId === two.pause);
      expect(plain && 'decisionId' in plain).toBe(false);
      await expectCode(
        a.claimInterrupt({ executionId: two.id, checkpointId: two.pause }, { decisionId: 'nope' }),
        'INVALID_DECISION',
      );
    });

    test('a local decision naming another run’s decided pause is PAUSE_NOT_FOUND, never answered with that run’s decision', async () => {
      const theirs = await paused(a);
      await a.recordDecision(decisionFor(theirs.id, theirs.pause));
      const mine = await paused(a);
      const err = (await b.recordDecision(decisionFor(mine.id, theirs.pause)).catch((e: unknown) => e)) as WaymarkError;
      expect(err.code).toBe('PAUSE_NOT_FOUND');
      expect(err.message).toContain(mine.id);
      expect(JSON.stringify(err.details ?? {})).not.toContain(theirs.id);
      expect((await a.listDecisions({ executionId: mine.id })).items).toEqual([]);
      // a decision of that run's own pause is still ALREADY_DECIDED's existing one
      expect(await b.recordDecision(decisionFor(theirs.id, theirs.pause))).toMatchObject({
        recorded: false,
        existing: { executionId: theirs.id },
      });
    });

    test('another run’s claim of a pause never settles a decision naming that pause under a different run', async () => {
      const theirs = await paused(a);
      await a.claimInterrupt(
        { executionId: theirs.id, checkpointId: theirs.pause },
        { next: resumedRow(theirs.id, theirs.pause) },
      );
      // a plane decision naming their pause's checkpoint id under another run
      const stray = decisionFor(exec(), theirs.pause, { source: 'plane' });
      expect(await b.recordDecision(stray)).toEqual({ recorded: true });
      expect(await a.getDecision(stray.executionId, theirs.pause)).toMatchObject({
        decisionId: stray.decisionId,
        state: 'pending',
        appliedBy: null,
        appliedAt: null,
        held: false,
      });
      expect((await b.listDecisions({ executionId: stray.executionId })).items).toEqual([
        expect.objectContaining({ state: 'pending', appliedBy: null }),
      ]);
    });

    test('a cancelled run supersedes its pause’s decision; deleting the run removes it', async () => {
      const { id, pause } = await paused(a);
      await a.recordDecision(decisionFor(id, pause));
      await b.cancel(id);
      expect(await a.getDecision(id, pause)).toMatchObject({ state: 'superseded', appliedBy: null, held: true });
      await b.deleteExecution(id);
      expect(await a.getDecision(id, pause)).toBeNull();
      expect((await a.listDecisions()).items).toEqual([]);
    });

    test('listDecisions pages in recording order and filters by derived state; a bad cursor or state is INVALID_OPTIONS', async () => {
      const runs = [await paused(a), await paused(a), await paused(a)];
      const ds = runs.map((r) => decisionFor(r.id, r.pause));
      for (const d of ds) await (d === ds[1] ? b : a).recordDecision(d);
      await a.claimInterrupt(
        { executionId: runs[1].id, checkpointId: runs[1].pause },
        { next: resumedRow(runs[1].id, runs[1].pause), decisionId: ds[1].decisionId },
      );
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await b.listDecisions({ limit: 2, cursor });
        seen.push(...page.items.map((x) => x.decisionId));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(ds.map((d) => d.decisionId));
      expect((await b.listDecisions({ state: 'pending' })).items.map((x) => x.decisionId)).toEqual([
        ds[0].decisionId,
        ds[2].decisionId,
      ]);
      expect((await b.listDecisions({ state: 'applied' })).items.map((x) => x.decisionId)).toEqual([ds[1].decisionId]);
      const firstPending = await b.listDecisions({ state: 'pending', limit: 1 });
      expect(
        (await b.listDecisions({ state: 'pending', cursor: firstPending.nextCursor! })).items.map((x) => x.decisionId),
      ).toEqual([ds[2].decisionId]);
      await expectCode(b.listDecisions({ cursor: 'bogus' }), 'INVALID_OPTIONS');
      await expectCode(b.listDecisions({ state: 'bogus' as never, limit: 0 }), 'INVALID_OPTIONS');
    });

    test('listDecisions of one execution: only its decisions, in recording order, paged, with the other filters; a bad executionId is INVALID_OPTIONS naming every problem', async () => {
      const one = await paused(a);
      const other = await paused(a);
      const mine = [
        decisionFor(one.id, one.pause),
        decisionFor(one.id, uuidv7(), { source: 'plane' }),
        decisionFor(one.id, uuidv7(), { source: 'plane' }),
      ];
      const theirs = decisionFor(other.id, other.pause);
      await a.recordDecision(mine[0]);
      await a.recordDecision(theirs);
      for (const d of mine.slice(1)) await a.recordDecision(d);
      await a.claimInterrupt(
        { executionId: other.id, checkpointId: other.pause },
        { next: resumedRow(other.id, other.pause), decisionId: theirs.decisionId },
      );
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await b.listDecisions({ executionId: one.id, limit: 2, cursor });
        seen.push(...page.items.map((x) => x.decisionId));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(mine.map((d) => d.decisionId));
      // only the first answers a pause held here
      expect((await b.listDecisions({ executionId: one.id })).items.map((x) => x.held)).toEqual([true, false, false]);
      expect(
        (await b.listDecisions({ executionId: one.id, state: 'pending', limit: 1 })).items.map((x) => x.decisionId),
      ).toEqual([mine[0].decisionId]);
      // both filters at once: the other run's applied decision is not this run's
      expect((await b.listDecisions({ executionId: one.id, state: 'applied' })).items).toEqual([]);
      expect(
        (await b.listDecisions({ executionId: other.id, state: 'applied' })).items.map((x) => x.decisionId),
      ).toEqual([theirs.decisionId]);
      expect((await b.listDecisions({ executionId: 'no-such-run' })).items).toEqual([]);
      const err = await b.listDecisions({ executionId: '', limit: -1 }).catch((e: WaymarkError) => e);
      expect(err).toMatchObject({
        code: 'INVALID_OPTIONS',
        details: { problems: [expect.stringContaining('executionId'), expect.stringContaining('limit')] },
      });
    });
  });
}
