/**
 * The store contract's conformance suite, part: the outbox and the rows it carries: events in order, importRows, row validation and size, corrupted rows, listExecutions.
 * Run per backend by runStoreSuite (suite.ts), under the same describe title.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import { uuidv7 } from '../../../shared/ids.js';
import { hasCode } from '../../../shared/errors.js';
import { eventBytes, LIMITS } from '../../../shared/limits.js';
import {
  contractTest,
  exec,
  expectCode,
  input,
  marker,
  pauseRow,
  withStore,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';

export function runOutboxSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    withStore(options, (s) => ({ h, store } = s));

    test('checkpoints and events of other kinds written in turn are sent in that order, also after all were acknowledged; a refused checkpoint is listed in it', async () => {
      const a = exec();
      const b = exec();
      const turn = (n: number, executionId = a) => input(executionId, { nodeId: `turn:${n}`, turn: n });
      const writeRound = async (n: number) => [
        (await store.put(turn(n))).id,
        (await store.putIdempotent(a, `k${n}`, n), `idempotency:${a}`),
        (await store.put(turn(n, b))).id,
        (await store.deleteExecution(b), `execution_deleted:${b}`),
        (await store.put(turn(n + 1))).id,
      ];
      const kinds = async () =>
        (await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) =>
          e.kind === 'checkpoint' ? e.id : `${e.kind}:${e.executionId}`,
        );
      // the deleted run's checkpoint went with it (its event was never sent)
      const first = await writeRound(0);
      expect(await kinds()).toEqual([first[0], first[1], first[3], first[4]]);
      // pages of one event, oldest first
      const paged: string[] = [];
      for (let i = 0; i < 4; i++) {
        const [e] = await store.fetchUnsynced({ limit: 1, maxBytes: 1e9 });
        paged.push(e.kind === 'checkpoint' ? e.id : `${e.kind}:${e.executionId}`);
        await store.applyResults({ synced: [e.id], quarantined: {} });
      }
      expect(paged).toEqual([first[0], first[1], first[3], first[4]]);
      expect((await store.outboxStats()).pendingCount).toBe(0);
      // nothing waits: the next events are ordered among themselves as written
      const second = await writeRound(2);
      const waiting = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(await kinds()).toEqual([second[0], second[1], second[3], second[4]]);
      await store.applyResults({
        synced: [waiting[1].id],
        quarantined: { [waiting[0].id]: 'refused: first', [waiting[3].id]: 'refused: last' },
      });
      expect(await kinds()).toEqual([second[3]]);
      const refused = await store.listQuarantined();
      expect(refused.map((q) => [q.id, q.reason])).toEqual([
        [second[0], 'refused: first'],
        [second[4], 'refused: last'],
      ]);
      expect((await store.listQuarantined({ afterId: second[0] })).map((q) => q.id)).toEqual([second[4]]);
      expect(await store.outboxStats()).toMatchObject({
        pendingCount: 1,
        quarantinedCount: 2,
        lastQuarantineReason: 'refused: last',
      });
    });

    test('every change queues one outbox event, in order, until synced or quarantined', async () => {
      const a = exec();
      const c0 = await store.put(input(a));
      const { checkpoint: p, pending: open } = await store.recordInterrupt(pauseRow(a), { reason: 'r', context: null });
      await store.claimInterrupt(open);
      await store.putIdempotent(a, 'k', 'v');
      await store.putIdempotent(a, 'k', 'ignored');
      const entries = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(entries.map((e) => e.kind)).toEqual([
        'checkpoint',
        'checkpoint',
        'interrupt_opened',
        'interrupt_claimed',
        'idempotency',
      ]);
      expect(entries[0].id).toBe(c0.id);
      expect(entries[0].event).toMatchObject({ kind: 'checkpoint', row: c0 });
      expect(entries[1].event).toMatchObject({ kind: 'checkpoint', row: p });
      expect(entries[3].event).toMatchObject({
        kind: 'interrupt_claimed',
        checkpointId: p.id,
        writerId: store.writerId,
      });
      const stats = await store.outboxStats();
      expect(stats.pendingCount).toBe(5);
      expect(stats.pendingBytes).toBeGreaterThan(0);
      expect(stats.oldestPendingAt).not.toBeNull();

      expect((await store.fetchUnsynced({ limit: 2, maxBytes: 1e9 })).length).toBe(2);
      expect((await store.fetchUnsynced({ limit: 100, maxBytes: 1 })).length).toBe(1);

      await store.applyResults({ synced: [entries[0].id, entries[1].id], quarantined: { [entries[2].id]: 'too odd' } });
      const left = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(left.map((e) => e.kind)).toEqual(['interrupt_claimed', 'idempotency']);
      const after = await store.outboxStats();
      expect(after).toMatchObject({ pendingCount: 2, quarantinedCount: 1, lastQuarantineReason: 'too odd' });
      const q = await store.listQuarantined();
      expect(q).toEqual([expect.objectContaining({ id: entries[2].id, reason: 'too odd', kind: 'interrupt_opened' })]);
      expect(await store.listQuarantined({ ids: [entries[2].id, entries[0].id, 'no-such-event'] })).toEqual(q);
      expect(await store.listQuarantined({ ids: [entries[0].id] })).toEqual([]);
      expect(await store.listQuarantined({ ids: [] })).toEqual([]);
      await store.markSynced(left.map((e) => e.id));
      expect((await store.outboxStats()).pendingCount).toBe(0);
    });

    test('importRows inserts missing rows as synced, never overwrites, and skips a stale pause', async () => {
      const src = exec();
      const rows = [
        await store.put(input(src)),
        await store.put(input(src, { nodeId: 'turn:0/tool:x', step: 'tool_call', state: { messages: [], t: 1 } })),
      ];
      const { checkpoint: paused, pending } = await store.recordInterrupt(pauseRow(src), {
        reason: 'r',
        context: { a: 1 },
      });
      await store.putIdempotent(src, 'charge', { id: 'ch_1' });
      const bundle = {
        checkpoints: [...rows, paused],
        pending,
        idempotency: await store.listIdempotent(src),
      };
      // a second store imports it
      const other = await options.make({});
      try {
        await other.store.setup();
        const res = await other.store.importRows(bundle);
        expect(res).toMatchObject({
          inserted: 3,
          skipped: 0,
          diverged: [],
          withheld: 0,
          pendingImported: true,
          stalePendingRemoved: [],
          idempotencyInserted: 1,
        });
        expect(await other.store.list(src)).toEqual(bundle.checkpoints);
        expect(await other.store.getPendingInterrupt(src)).toEqual(pending);
        expect(await other.store.getIdempotent(src, 'charge')).toEqual({ hit: true, result: { id: 'ch_1' } });
        expect(await other.store.readState(paused)).toEqual(await store.readState(paused));
        expect((await other.store.outboxStats()).pendingCount).toBe(0);
        // re-import is a no-op
        const again = await other.store.importRows(bundle);
        expect(again).toMatchObject({ inserted: 0, skipped: 3, pendingImported: false, idempotencyInserted: 0 });
        // the run continues with the next seq, and a claimed pause is not brought back
        await other.store.claimInterrupt(pending);
        const cont = await other.store.put(input(src, { nodeId: 'turn:1', turn: 1 }));
        expect(cont.seq).toBe(3);
        expect((await other.store.importRows(bundle)).pendingImported).toBe(false);
        expect(await other.store.getPendingInterrupt(src)).toBeNull();
        // a different row at a taken seq diverges, and the local row stays
        const clash = { ...rows[0], id: uuidv7(), seq: 3 };
        const res3 = await other.store.importRows({ checkpoints: [clash], pending: null, idempotency: [] });
        expect(res3.diverged).toEqual([
          { executionId: src, seq: 3, reason: 'seq_taken', localId: cont.id, incomingId: clash.id },
        ]);
        expect((await other.store.latest(src))?.id).toBe(cont.id);
      } finally {
        await other.close();
      }
    });

    test('heldByPlane: a run is held by a plane once one of its checkpoints was acknowledged, or restored from one', async () => {
      const a = exec();
      await store.put(input(a));
      await store.recordInterrupt(pauseRow(a), { reason: 'r', context: null });
      expect(await store.heldByPlane(a)).toBe(false);
      // refused by the plane (quarantined): the plane does not hold it
      const [first, ...rest] = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(first.kind).toBe('checkpoint');
      await store.applyResults({ quarantined: { [first.id]: 'refused' } });
      expect(await store.heldByPlane(a)).toBe(false);
      // another kind of event acknowledged: the plane holds no checkpoint of the run yet
      await store.applyResults({ synced: rest.filter((e) => e.kind === 'interrupt_opened').map((e) => e.id) });
      expect(await store.heldByPlane(a)).toBe(false);
      await store.applyResults({ synced: rest.filter((e) => e.kind === 'checkpoint').map((e) => e.id) });
      expect(await store.heldByPlane(a)).toBe(true);
      const b = exec();
      const row = await store.put(input(b));
      expect(await store.heldByPlane(b)).toBe(false);
      await store.applyResults({ synced: [row.id] });
      expect(await store.heldByPlane(b)).toBe(true);
      expect(await store.heldByPlane(exec())).toBe(false);
      // a batch posted with no answer (a crash after the plane committed): its runs may be held there
      const c = `${exec()}-"q\u00e9"`;
      const d = exec();
      await store.put(input(c));
      await store.put(input(d));
      await store.noteSending([c, c, d]);
      expect([await store.heldByPlane(c), await store.heldByPlane(d), await store.heldByPlane(`${c}x`)]).toEqual([
        true,
        true,
        false,
      ]);
      // the next batch replaces the note: what was only in flight before is not held any more
      await store.noteSending([d]);
      expect([await store.heldByPlane(c), await store.heldByPlane(d)]).toEqual([false, true]);
      // rows restored into another store: held there too, and nothing is queued or counted as refused
      const other = await options.make({});
      try {
        await other.store.setup();
        const bundle = {
          checkpoints: await store.list(a),
          pending: await store.getPendingInterrupt(a),
          idempotency: [],
        };
        await other.store.importRows(bundle);
        expect(await other.store.heldByPlane(a)).toBe(true);
        expect(await other.store.outboxStats()).toMatchObject({ pendingCount: 0, quarantinedCount: 0 });
        expect(await other.store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).toEqual([]);
        // deleted, the run is no longer held here
        await other.store.deleteExecution(a);
        expect(await other.store.heldByPlane(a)).toBe(false);
        // restored again over the sent marks the deletion left behind: held again, nothing queued
        expect((await other.store.importRows(bundle)).inserted).toBe(bundle.checkpoints.length);
        expect(await other.store.heldByPlane(a)).toBe(true);
        expect((await other.store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => e.kind)).toEqual([
          'execution_deleted',
        ]);
      } finally {
        await other.close();
      }
    });

    test('an invalid row is refused with INVALID_ROW and nothing is written', async () => {
      const a = exec();
      await expectCode(store.put(input(a, { step: 'bogus' as never })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { executionId: '' })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { executionId: 'x\u0000y' })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { state: { when: new Date() as never } })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { nodeInput: { n: Number.NaN } })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { id: 'not-a-uuid' })), 'INVALID_ROW');
      await expectCode(store.put(input(a, { state: { blob: 'x'.repeat(1_100_000) } })), 'INVALID_ROW');
      let deep: unknown = 1;
      for (let i = 0; i < 100; i++) deep = [deep];
      await expectCode(store.put(input(a, { nodeInput: deep as never })), 'INVALID_ROW');
      await expectCode(store.putIdempotent(a, 'k', (() => 1) as never), 'INVALID_ROW');
      await expectCode(
        store.importRows({ checkpoints: [{ id: 'x' } as never], pending: null, idempotency: [] }),
        'INVALID_ROW',
      );
      expect(await store.list(a)).toEqual([]);
      expect((await store.outboxStats()).pendingCount).toBe(0);
      expect((await store.put(input(a))).seq).toBe(0);
    });

    test('row size defect: a multibyte row is measured in UTF-8 bytes of the event as sent (one byte under and at the limit stored, one byte over refused)', async () => {
      const base = exec();
      const ids = { probe: `${base}-p`, under: `${base}-u`, at: `${base}-a`, over: `${base}-o` };
      // `n` UTF-8 bytes of emoji (4 bytes, 2 UTF-16 units) and CJK (3 bytes, 1 unit), ASCII for the remainder
      const fill = (n: number) => {
        const emoji = '\u{1F600}'.repeat(1000);
        const cjk = '\u6F22'.repeat(Math.floor((n - 4000) / 3));
        return emoji + cjk + 'x'.repeat(n - 4000 - 3 * cjk.length);
      };
      const row = (executionId: string, nodeOutput: string) => input(executionId, { state: {}, nodeOutput });
      const sent = async (id: string) => {
        const entry = (await store.fetchUnsynced({ limit: 1000, maxBytes: 1e9 })).find((e) => e.id === id)!;
        expect(entry.bytes).toBe(eventBytes(entry.event));
        return entry.bytes;
      };
      const room = LIMITS.rowBytes - (await sent((await store.put(row(ids.probe, ''))).id));
      expect(await sent((await store.put(row(ids.under, fill(room - 1)))).id)).toBe(LIMITS.rowBytes - 1);
      expect(await sent((await store.put(row(ids.at, fill(room)))).id)).toBe(LIMITS.rowBytes);
      await expectCode(store.put(row(ids.over, fill(room + 1))), 'INVALID_ROW');
      expect(await store.list(ids.over)).toEqual([]);
      expect((await store.getById((await store.latest(ids.at))!.id))?.nodeOutput).toBe(fill(room));
    });

    test('row size defect: an idempotency entry is held to the row limit as its event is sent (multibyte; at the limit stored and queued, one byte over refused, nothing written)', async () => {
      const a = exec();
      // emoji (4 bytes) and CJK (3 bytes) for `n` UTF-8 bytes, ASCII for the remainder
      const fill = (n: number) => {
        const cjk = '\u6F22'.repeat(Math.floor((n - 4000) / 3));
        return '\u{1F600}'.repeat(1000) + cjk + 'x'.repeat(n - 4000 - 3 * cjk.length);
      };
      const sent = async (key: string) =>
        (await store.fetchUnsynced({ limit: 1000, maxBytes: 1e9 })).find(
          (e) => e.kind === 'idempotency' && (e.event as { row: { key: string } }).row.key === key,
        )!;
      // keys of one length: the entries differ by their result only
      await store.putIdempotent(a, 'p', { body: '' });
      const room = LIMITS.rowBytes - (await sent('p')).bytes;
      const before = (await store.outboxStats()).pendingCount;
      await expectCode(store.putIdempotent(a, 'o', { body: fill(room + 1) }), 'INVALID_ROW');
      expect(await store.getIdempotent(a, 'o')).toEqual({ hit: false });
      expect((await store.outboxStats()).pendingCount).toBe(before);
      await store.putIdempotent(a, 'a', { body: fill(room) });
      const at = await sent('a');
      expect([at.bytes, eventBytes(at.event)]).toEqual([LIMITS.rowBytes, LIMITS.rowBytes]);
      expect(await store.getIdempotent(a, 'a')).toEqual({ hit: true, result: { body: fill(room) } });
    });

    test('outbox byte counts are UTF-8 bytes of each event as sent, for every kind', async () => {
      const a = exec();
      await store.put(input(a, { nodeInput: '\u6F22\u5B57 \u{1F600}' }));
      const { pending } = await store.recordInterrupt(pauseRow(a), {
        reason: '\u627F\u8A8D\u{1F64F}',
        context: { note: '\u{1F4B8}' },
      });
      await store.claimInterrupt(pending);
      await store.putIdempotent(a, '\u9375', '\u7D50\u679C\u{1F389}');
      const gone = `${a}-\u6D88`;
      await store.put(input(gone));
      await store.deleteExecution(gone);
      const entries = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(entries.map((e) => e.kind)).toEqual([
        'checkpoint',
        'checkpoint',
        'interrupt_opened',
        'interrupt_claimed',
        'idempotency',
        'execution_deleted',
      ]);
      for (const e of entries) expect(e.bytes, e.kind).toBe(eventBytes(e.event));
      expect((await store.outboxStats()).pendingBytes).toBe(entries.reduce((n, e) => n + eventBytes(e.event), 0));
    });

    test('a corrupted stored row is reported with its id, never skipped', async () => {
      const a = exec();
      const r0 = await store.put(input(a));
      const r1 = await store.put(input(a, { nodeId: 'turn:1', turn: 1 }));
      await h.corrupt(r1.id, 'node_input', '{not json');
      const err = await store.latest(a).then(
        () => null,
        (e: unknown) => e,
      );
      expect(hasCode(err, 'CORRUPT_ROW')).toBe(true);
      expect((err as Error).message).toContain(r1.id);
      await expect(store.list(a)).rejects.toMatchObject({ code: 'CORRUPT_ROW' });
      await h.corrupt(r0.id, 'state', '{"v":1,"kind":"mystery"}');
      await expect(store.getById(r0.id)).rejects.toMatchObject({ code: 'CORRUPT_ROW', details: { rowId: r0.id } });
      const entries = await store.fetchUnsynced({ limit: 10, maxBytes: 1e9 });
      expect(entries[0]).toMatchObject({ id: r0.id, event: null });
      expect(entries[0].problem).toContain(r0.id);
    });

    test('usageTotals over a row whose node_output is not JSON throws CorruptRowError naming that row, as list() does', async () => {
      const a = exec();
      // a row with usage, so the statement has something to read
      await store.put(input(a, { nodeOutput: { usage: [] } }));
      const r1 = await store.put(input(a, { nodeId: 'turn:1', turn: 1, nodeOutput: { text: 'reply' } }));
      await h.corrupt(r1.id, 'node_output', '{not json');
      await expect(store.usageTotals([a])).rejects.toMatchObject({
        name: 'CorruptRowError',
        code: 'CORRUPT_ROW',
        details: { rowId: r1.id },
      });
      await expect(store.list(a)).rejects.toMatchObject({ code: 'CORRUPT_ROW', details: { rowId: r1.id } });
    });

    test('listExecutions reports running, paused, completed and failed runs', async () => {
      const ids = { running: `a-${exec()}`, paused: `b-${exec()}`, completed: `c-${exec()}`, failed: `d-${exec()}` };
      await store.put(input(ids.running));
      await store.recordInterrupt(pauseRow(ids.paused), { reason: 'r', context: null });
      await store.put(input(ids.completed));
      await store.put(marker(ids.completed, 'completed'));
      await store.put(marker(ids.failed, 'failed'));
      const all = await store.listExecutions();
      const byId = Object.fromEntries(all.map((e) => [e.executionId, e.state]));
      expect(byId).toEqual({
        [ids.running]: 'running',
        [ids.paused]: 'paused',
        [ids.completed]: 'completed',
        [ids.failed]: 'failed',
      });
      const page = await store.listExecutions({ afterExecutionId: ids.paused, limit: 1 });
      expect(page.map((e) => e.executionId)).toEqual([ids.completed]);
    });
  });
}
