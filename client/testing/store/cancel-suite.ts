/**
 * The cancel part of the store contract, run per backend by
 * runStoreSuite. Two handles on one store stand for two processes: `a` runs,
 * `b` cancels.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import { hasCode } from '../../../shared/errors.js';
import { contractTest, expectCode, input, marker, pauseRow, withTwoHandles, type StoreSuiteOptions } from './suite.js';

let n = 0;
const exec = () => `cancel-${Date.now().toString(36)}-${++n}`;

async function rowsOf(store: Checkpointer, id: string) {
  return (await store.list(id)).map((r) => `${r.seq}:${r.step}:${r.status}`);
}

export function runCancelSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}: cancel`, () => {
    let a: Checkpointer;
    let b: Checkpointer;
    withTwoHandles(options, (pair) => ({ a, b } = pair));

    test('cancel of a running run writes a cancelled run_end marker with its state; the holder is refused with RUN_CANCELLED and writes nothing more', async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 60_000 });
      await a.put(input(id), { lease: la });
      const tool = await a.put(
        input(id, {
          nodeId: 'turn:0/tool:x',
          step: 'tool_call',
          agentPath: 'agent:test/tool:x',
          state: { messages: [], turn: 0, toolName: 'x' },
        }),
        { lease: la },
      );
      const r = await b.cancel(id, { reason: 'operator said stop' });
      expect(r.alreadyCancelled).toBe(false);
      expect(r.closedPause).toBeNull();
      expect(r.checkpoint).toMatchObject({
        executionId: id,
        seq: 2,
        step: 'run_end',
        status: 'cancelled',
        nodeId: 'run_end',
        agentPath: 'agent:test',
        parentId: tool.id,
        nodeOutput: { reason: 'operator said stop' },
      });
      expect(await b.readState(r.checkpoint)).toEqual({ messages: [], turn: 0, toolName: 'x' });
      // the runner's next fenced write, renewal, pause and claim are all refused, naming the cancel
      let err: unknown;
      await a.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease: la }).catch((e) => (err = e));
      expect(hasCode(err, 'RUN_CANCELLED')).toBe(true);
      expect((err as { details: unknown }).details).toMatchObject({
        executionId: id,
        reason: 'operator said stop',
        checkpointId: r.checkpoint.id,
      });
      await expectCode(a.renewLease(la), 'RUN_CANCELLED');
      await expectCode(a.recordInterrupt(pauseRow(id), { reason: 'r', context: null }, { lease: la }), 'RUN_CANCELLED');
      await expectCode(a.put(marker(id, 'completed'), { lease: la }), 'RUN_CANCELLED');
      expect(await rowsOf(b, id)).toEqual(['0:llm_call:completed', '1:tool_call:completed', '2:run_end:cancelled']);
      // nobody takes the run up again
      await expectCode(b.acquireLease(id, { holder: 'B', ttlMs: 60_000 }), 'RUN_CANCELLED');
      expect(await b.getLease(id)).toMatchObject({ holder: null, live: false });
      const [summary] = await b.listExecutions({ state: 'cancelled' });
      expect(summary).toMatchObject({ executionId: id, state: 'cancelled', lastStatus: 'cancelled', rowCount: 3 });
      expect((await b.listExecutions({ state: 'running' })).map((e) => e.executionId)).not.toContain(id);
      expect((await b.listExecutions({ state: 'completed' })).map((e) => e.executionId)).not.toContain(id);
    });

    test('cancel of a paused run closes its pause in the same transaction (pending row gone, interrupt_closed queued); the pause can no longer be claimed', async () => {
      const id = exec();
      await a.put(input(id));
      const { checkpoint: paused } = await a.recordInterrupt(pauseRow(id), { reason: 'approve refund', context: null });
      const r = await b.cancel(id, { reason: 'refund withdrawn' });
      expect(r.closedPause).toMatchObject({ executionId: id, checkpointId: paused.id, reason: 'approve refund' });
      expect(await a.getPendingInterrupt(id)).toBeNull();
      expect(await a.listPendingInterrupts()).toEqual([]);
      const events = (await a.fetchUnsynced({ limit: 10_000, maxBytes: 1e9 })).filter((e) => e.executionId === id);
      expect(events.map((e) => e.kind).sort()).toEqual([
        'checkpoint',
        'checkpoint',
        'checkpoint',
        'interrupt_closed',
        'interrupt_opened',
      ]);
      const closed = events.find((e) => e.kind === 'interrupt_closed');
      expect(closed?.event).toMatchObject({
        kind: 'interrupt_closed',
        executionId: id,
        checkpointId: paused.id,
        writerId: b.writerId,
      });
      expect(events.filter((e) => e.kind === 'checkpoint').map((e) => e.id)).toContain(r.checkpoint.id);
      expect(
        await a.claimInterrupt({ executionId: id, checkpointId: paused.id }, { lease: { holder: 'A', ttlMs: 60_000 } }),
      ).toBeNull();
      expect((await a.listExecutions({ state: 'cancelled' })).map((e) => e.executionId)).toEqual([id]);
    });

    test('cancel twice: the second writes nothing and reports alreadyCancelled with the first marker', async () => {
      const id = exec();
      await a.put(input(id));
      const first = await a.cancel(id, { reason: 'one' });
      const again = await b.cancel(id, { reason: 'two' });
      expect(again).toMatchObject({ alreadyCancelled: true, closedPause: null });
      expect(again.checkpoint.id).toBe(first.checkpoint.id);
      expect(again.checkpoint.nodeOutput).toEqual({ reason: 'one' });
      expect(await rowsOf(a, id)).toEqual(['0:llm_call:completed', '1:run_end:cancelled']);
    });

    test('cancel of a completed run is refused with ALREADY_FINISHED; of an unknown run with EXECUTION_NOT_FOUND; nothing written', async () => {
      const id = exec();
      await a.put(input(id));
      await a.put(marker(id, 'completed'));
      const before = (await a.outboxStats()).pendingCount;
      await expectCode(b.cancel(id), 'ALREADY_FINISHED');
      await expectCode(b.cancel(`${id}-never`), 'EXECUTION_NOT_FOUND');
      expect(await rowsOf(a, id)).toEqual(['0:llm_call:completed', '1:run_end:completed']);
      expect((await a.outboxStats()).pendingCount).toBe(before);
    });

    test('cancel with bad options names every problem (INVALID_CANCEL) and writes nothing', async () => {
      const id = exec();
      await a.put(input(id));
      let err: unknown;
      await b.cancel('', { reason: 7 as unknown as string }).catch((e) => (err = e));
      expect(hasCode(err, 'INVALID_CANCEL')).toBe(true);
      const problems = (err as { details: { problems: string[] } }).details.problems;
      expect(problems).toHaveLength(2);
      expect(problems.join('; ')).toMatch(/executionId/);
      expect(problems.join('; ')).toMatch(/reason: must be a string/);
      err = undefined;
      await b.cancel(id, { reason: 'x'.repeat(5000) }).catch((e) => (err = e));
      expect(hasCode(err, 'INVALID_CANCEL')).toBe(true);
      await expectCode(b.cancel(id, { reason: 'a\u0000b' }), 'INVALID_CANCEL');
      expect(await rowsOf(a, id)).toEqual(['0:llm_call:completed']);
    });

    test('a failed run may be cancelled (it becomes final); cancelled runs are pruned like finished ones', async () => {
      const id = exec();
      await a.put(input(id));
      await a.put(marker(id, 'failed'));
      const r = await b.cancel(id);
      expect(r.checkpoint).toMatchObject({ seq: 2, status: 'cancelled', nodeOutput: { reason: null } });
      await expectCode(a.acquireLease(id, { holder: 'A', ttlMs: 1000 }), 'RUN_CANCELLED');
      const pruned = await a.prune({ olderThan: new Date(Date.now() + 60_000), includeUnsynced: true });
      expect(pruned.executions).toBeGreaterThanOrEqual(1);
      expect(await a.latest(id)).toBeNull();
    });
  });
}
