/**
 * Takeover across machines, at the plane over HTTP, through the run's one
 * owner record: a run that is not paused may be taken over by another writer
 * only once its owner's hold expired (the plane's clock); one writer wins and
 * becomes the owner; the loser's later rows of the run are refused
 * (`taken_over`); a winner that never writes is taken over in turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

const DELAY_MS = 4000;

const pg = await pgReady('takeover: plane on postgres');

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`plane (${backend}): takeover of a run that is not paused`, () => {
    let plane: TestPlane;
    let key: string;
    let db: TestDatabase | null = null;
    beforeAll(async () => {
      if (backend === 'postgres') db = await createTestDatabase('waymark_takeover');
      plane = await startTestPlane(db ? { url: db.url } : 'pglite', { takeoverAfterMs: DELAY_MS });
      key = await plane.key('fleet', ['ingest', 'read']);
    });
    afterAll(async () => {
      await plane?.close();
      await db?.drop();
    });

    const ingest = (rows: unknown[], writerId: string) =>
      call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId, rows } });
    const takeover = (id: string, writerId: string, seq: number) =>
      call(`${plane.url}/v1/executions/${id}/takeover`, { key, json: { writerId, seq } });

    it('a batch sent again after the run was taken over is answered as stored where the plane holds its rows and pause events: duplicate, not taken_over', async () => {
      // machine A paused the run, resumed it and wrote on; the plane stored the batch, its answer was lost
      const rows = await eventsOf(async (s) => {
        await s.put(step('tk-resend', 0));
        const { checkpoint } = await s.recordInterrupt(pause('tk-resend', 1), { reason: 'r', context: null });
        await s.claimInterrupt(
          { executionId: 'tk-resend', checkpointId: checkpoint.id },
          { next: step('tk-resend', 2) },
        );
      }, 'machine-a');
      expect(rows.map((r) => r.kind)).toContain('interrupt_claimed');
      expect((await ingest(rows, 'machine-a')).body.accepted).toBe(rows.length);
      // A is heard from no more; once its hold expired, B takes the run over at its newest row
      await new Promise((r) => setTimeout(r, DELAY_MS + 500));
      expect((await takeover('tk-resend', 'machine-b', 2)).status).toBe(200);
      const again = await ingest(rows, 'machine-a');
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ accepted: 0, duplicate: rows.length, rejected: 0 });
      // a pause event A never sent before is still refused: A lost the run
      const late = await eventsOf(async (s) => {
        await s.recordInterrupt(pause('tk-resend', 3), { reason: 'r', context: null });
      }, 'machine-a');
      const refused = await ingest(
        late.filter((r) => r.kind === 'interrupt_opened'),
        'machine-a',
      );
      expect(refused.body.results).toEqual([expect.objectContaining({ status: 'rejected', code: 'taken_over' })]);
      // nor does a later row of A pass under the id of a pause event the plane stores (ids are looked up by kind)
      const claimed = rows.find((r) => r.kind === 'interrupt_claimed')!;
      const [next] = (
        await eventsOf(async (s) => {
          for (let i = 0; i <= 3; i++) await s.put(step('tk-resend', i));
        }, 'machine-a')
      ).slice(3) as Extract<(typeof rows)[number], { kind: 'checkpoint' }>[];
      const disguised = { ...next, id: claimed.id, row: { ...next.row, id: claimed.id } };
      expect((await ingest([disguised], 'machine-a')).body.results).toEqual([
        expect.objectContaining({ status: 'rejected', code: 'taken_over' }),
      ]);
    }, 30_000);

    it('refused while its writer was heard from within the delay (LEASE_LIVE), for a stale copy (STALE_COPY) and for a paused run; then exactly one of two writers wins; the loser of the run has its later rows refused as taken_over and is told so', async () => {
      // machine A wrote two rows of the run and was last heard from now
      const a = await eventsOf(async (s) => {
        await s.put(step('tk-1', 0));
        await s.put(step('tk-1', 1));
      }, 'machine-a');
      expect((await ingest(a, 'machine-a')).body.accepted).toBe(2);
      const live = await takeover('tk-1', 'machine-b', 1);
      expect(live.status).toBe(409);
      expect(live.body.error).toMatchObject({
        code: 'LEASE_LIVE',
        details: { executionId: 'tk-1', writerId: 'machine-a', liveUntil: expect.any(String) },
      });
      expect(Date.parse(live.body.error.details.liveUntil) - Date.now()).toBeLessThanOrEqual(DELAY_MS + 1000);
      // a stale copy asking while the hold runs is told of the hold first: there is nothing to catch up for yet
      expect((await takeover('tk-1', 'machine-b', 0)).body.error).toMatchObject({
        code: 'LEASE_LIVE',
        details: { writerId: 'machine-a' },
      });
      // the run's own writer (its store, restarted) is never refused
      expect((await takeover('tk-1', 'machine-a', 1)).body).toMatchObject({
        writerId: 'machine-a',
        fromSeq: 1,
        takenFrom: null,
        epoch: 2,
      });
      expect((await takeover('tk-none', 'machine-b', 0)).status).toBe(404);
      const paused = await eventsOf(
        async (s) => void (await s.recordInterrupt(pause('tk-paused'), { reason: 'r', context: null })),
        'machine-a',
      );
      await ingest(paused, 'machine-a');
      expect((await takeover('tk-paused', 'machine-b', 0)).body.error).toMatchObject({
        code: 'NOT_RUNNING',
        details: { status: 'paused' },
      });
      // a copy that missed the run's end is stale, not free to run it again
      const done = await eventsOf(async (s) => {
        await s.put(step('tk-done', 0));
        await s.put({ ...step('tk-done', 1), nodeId: 'run_end', step: 'run_end' as const });
      }, 'machine-a');
      await ingest(done, 'machine-a');
      expect((await takeover('tk-done', 'machine-b', 0)).body.error).toMatchObject({
        code: 'STALE_COPY',
        details: { planeSeq: 1 },
      });
      expect((await takeover('tk-done', 'machine-b', 1)).body.error).toMatchObject({
        code: 'NOT_RUNNING',
        details: { status: 'completed' },
      });

      // once A's contact is older than the delay, B and C ask at once: one wins
      const deadline = Date.now() + 120_000;
      let answers: Awaited<ReturnType<typeof takeover>>[] = [];
      for (;;) {
        answers = await Promise.all([takeover('tk-1', 'machine-b', 1), takeover('tk-1', 'machine-c', 1)]);
        if (answers.some((r) => r.status === 200)) break;
        expect(answers.map((r) => r.body.error?.code)).toEqual(['LEASE_LIVE', 'LEASE_LIVE']);
        if (Date.now() > deadline) throw new Error('never taken over');
        await new Promise((r) => setTimeout(r, 200));
      }
      const won = answers.filter((r) => r.status === 200);
      const lost = answers.filter((r) => r.status !== 200);
      expect(won).toHaveLength(1);
      const winner = won[0].body.writerId as string;
      expect(won[0].body).toMatchObject({ fromSeq: 1, takenFrom: 'machine-a' });
      // the other asked at the same moment: the winner holds the run now, live (LEASE_LIVE naming it), or, asked
      // just before the delay ran out on a busy machine, A still held it; asked again, it is told who holds it
      const loserId = winner === 'machine-b' ? 'machine-c' : 'machine-b';
      let lostAnswer = lost[0];
      if (lostAnswer.body.error?.details?.writerId === 'machine-a') lostAnswer = await takeover('tk-1', loserId, 1);
      expect(lostAnswer.status).toBe(409);
      expect(lostAnswer.body.error).toMatchObject({ code: 'LEASE_LIVE', details: { writerId: winner } });
      // the winner asking again is answered as a win (its own run now)
      expect((await takeover('tk-1', winner, 1)).status).toBe(200);
      const ex = await call(`${plane.url}/v1/executions/tk-1`, { key });
      const [t] = ex.body.takeovers;
      expect(t).toMatchObject({ fromSeq: 1, winnerWriterId: winner, loserWriterId: 'machine-a' });
      expect(Date.parse(t.at) - Date.parse(t.loserLastContactAt)).toBeGreaterThanOrEqual(DELAY_MS);

      // A comes back with rows it wrote offline after seq 1: refused, and it is told it lost the run
      const offline = await eventsOf(async (s) => {
        await s.put(step('tk-1', 0));
        await s.put(step('tk-1', 1));
        await s.put(step('tk-1', 2));
        await s.putIdempotent('tk-1', 'effect:1', { done: true });
      }, 'machine-a');
      const back = await ingest(offline.slice(2), 'machine-a');
      expect(back.body.results[0]).toMatchObject({ status: 'rejected', code: 'taken_over' });
      expect(back.body.results[0].reason).toContain(`taken over by writer '${winner}' at seq 1`);
      // an effect it recorded is still worth knowing: accepted
      expect(back.body.results[1]).toMatchObject({ status: 'accepted' });
      // its copy holds a branch the plane refused: it lost the run, and may not take it back with that copy
      // (not free: the winner holds it live, so adopting the plane's branch would gain nothing yet)
      expect((await takeover('tk-1', 'machine-a', 2)).body.error).toMatchObject({
        code: 'RUN_TAKEN_OVER',
        details: { writerId: winner, free: false },
      });
      // the winner's rows go on; the loser's refused row left no hole
      const mine = await eventsOf(async (s) => {
        await s.put(step('tk-1', 0));
        await s.put(step('tk-1', 1));
        await s.put(step('tk-1', 5));
      }, winner);
      expect((await ingest(mine.slice(2), winner)).body.results[0]).toMatchObject({ status: 'accepted' });
      expect((await call(`${plane.url}/v1/executions/tk-1`, { key })).body.execution).toMatchObject({
        rowCount: 3,
        holeCount: 0,
        writerId: winner,
      });
      // the run page says who took it from whom
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key, next: '/' }),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const page = await (await fetch(`${plane.url}/runs/tk-1`, { headers: { cookie } })).text();
      expect(page).toContain('data-testid="takeovers"');
      expect(page).toMatch(
        new RegExp(
          `after seq 1, by <span class="writer"[^>]*data-writer="${winner}">[\\s\\S]*? from <span class="writer"[^>]*data-writer="machine-a">`,
        ),
      );
    });

    it('a pause closed by a cancel at the plane is refused to every claimer as closed by the cancel (never as claimed, never taken over)', async () => {
      const paused = await eventsOf(
        async (s) => void (await s.recordInterrupt(pause('tk-cancelled'), { reason: 'r', context: null })),
        'machine-a',
      );
      await ingest(paused, 'machine-a');
      const canceller = await plane.key('fleet', ['cancel']);
      const cancel = await call(`${plane.url}/v1/executions/tk-cancelled/cancel`, {
        key: canceller,
        json: { reason: 'customer withdrew' },
      });
      expect(cancel.status).toBe(200);
      const checkpointId = (paused[0] as { row: { id: string } }).row.id;
      for (const writerId of ['machine-a', 'machine-b']) {
        const claim = await call(`${plane.url}/v1/executions/tk-cancelled/claim`, {
          key,
          json: { writerId, checkpointId },
        });
        expect(claim.status).toBe(409);
        expect(claim.body.error).toMatchObject({ code: 'ALREADY_CLAIMED', details: { closed: 'cancel' } });
      }
    });

    it('a winner that dies before writing strands nothing: once its own hold expires, another writer takes the run over; a copy missing an effect the plane recorded is refused naming it', async () => {
      const a = await eventsOf(async (s) => {
        await s.put(step('tk-2', 0));
        await s.put(step('tk-2', 1));
        await s.putIdempotent('tk-2', 'charge:1', { ok: true });
      }, 'machine-a');
      expect((await ingest(a, 'machine-a')).body.accepted).toBe(3);
      const ask = (writerId: string, keys?: string[]) =>
        call(`${plane.url}/v1/executions/tk-2/takeover`, {
          key,
          json: { writerId, seq: 1, holder: `${writerId}#1`, ttlMs: 1000, ...(keys ? { idempotencyKeys: keys } : {}) },
        });
      // ask until the answer is no longer LEASE_LIVE (every answer before it is)
      const eventually = async (writerId: string, keys: string[], status = 200) => {
        const deadline = Date.now() + 120_000;
        for (;;) {
          const r = await ask(writerId, keys);
          if (r.body.error?.code !== 'LEASE_LIVE') {
            expect(r.status).toBe(status);
            return r;
          }
          if (Date.now() > deadline) throw new Error('never taken over');
          await new Promise((res) => setTimeout(res, 200));
        }
      };
      // B's copy lacks the recorded charge: told of A's hold while it runs, then refused, the key named
      const stale = await eventually('machine-b', [], 409);
      expect(stale.body.error).toMatchObject({
        code: 'STALE_COPY',
        details: { missingKeys: ['charge:1'], missingCount: 1 },
      });
      expect((await eventually('machine-b', ['charge:1'])).body).toMatchObject({ takenFrom: 'machine-a' });
      // B dies without a row: C is refused while B's hold runs, then takes it (no takeover is permanent)
      expect((await ask('machine-c', ['charge:1'])).body.error).toMatchObject({
        code: 'LEASE_LIVE',
        details: { writerId: 'machine-b' },
      });
      const c = await eventually('machine-c', ['charge:1']);
      expect(c.body).toMatchObject({ takenFrom: 'machine-b' });
      expect(c.body.epoch).toBeGreaterThan(2);
    });
  });
}
