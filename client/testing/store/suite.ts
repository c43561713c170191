/**
 * The store contract's conformance suite. Every adapter runs exactly these
 * tests; a skip must name its reason.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer, CheckpointInput, Lease } from '../../checkpointer.js';
import type { FaultHook } from '../../faults.js';
import { uuidv7 } from '../../../shared/ids.js';
import type { State } from '../../../shared/codec.js';
import { hasCode, type ErrorCode } from '../../../shared/errors.js';
import { eventBytes, LIMITS } from '../../../shared/limits.js';
import { runLeaseSuite } from './lease-suite.js';
import { runCancelSuite } from './cancel-suite.js';
import { decisionFor, runDecisionSuite } from './decisions.js';

export interface StoreHarness {
  store: Checkpointer;
  /** Overwrite one column of a stored checkpoint with raw text (simulated corruption). */
  corrupt(rowId: string, column: 'state' | 'node_input', text: string): Promise<void>;
  /** A second, independent handle on the same stored data (another process would open the same). */
  reopen(): Promise<Checkpointer>;
  close(): Promise<void>;
}

export interface StoreSuiteOptions {
  name: string;
  make(options: { faults?: FaultHook }): Promise<StoreHarness>;
  skip?: { test: string; reason: string }[];
}

let n = 0;
const exec = () => `exec-${Date.now().toString(36)}-${++n}`;

export function input(executionId: string, over: Partial<CheckpointInput> = {}): CheckpointInput {
  return {
    executionId,
    nodeId: 'turn:0',
    turn: 0,
    step: 'llm_call',
    status: 'completed',
    agentPath: 'agent:test',
    state: { messages: [{ role: 'user', content: 'hi' }], turn: 0 },
    ...over,
  };
}

export const marker = (executionId: string, status: 'completed' | 'failed', createdAt?: string) => input(executionId, { nodeId: 'run_end', step: 'run_end', status, createdAt });

export const pauseRow = (executionId: string) => input(executionId, { nodeId: 'turn:0/tool:refund', step: 'hitl_pause', status: 'interrupted', agentPath: 'agent:test/tool:refund' });

export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err, `expected an error with code ${code}`).toBeDefined();
  expect(hasCode(err, code), `expected code ${code}, got ${(err as { code?: string }).code}: ${(err as Error).message}`).toBe(true);
}

/** `it`, except for the tests `options.skip` names: those are skipped, each showing its reason. */
export function contractTest(options: StoreSuiteOptions): (name: string, fn: () => Promise<void>) => void {
  const skipped = new Map((options.skip ?? []).map((s) => [s.test, s.reason]));
  return (name, fn) => {
    const reason = skipped.get(name);
    if (reason) it.skip(`${name} — skipped: ${reason}`, fn);
    else it(name, fn);
  };
}

/**
 * Two handles on one store for each test of the enclosing describe, standing
 * for two processes: `a` from the harness, set up; `b` reopened on its data.
 * `use` receives them before each test; both are closed after it.
 */
export function withTwoHandles(options: StoreSuiteOptions, use: (handles: { a: Checkpointer; b: Checkpointer }) => void): void {
  let h: StoreHarness;
  let b: Checkpointer;
  beforeEach(async () => {
    h = await options.make({});
    await h.store.setup();
    b = await h.reopen();
    use({ a: h.store, b });
  });
  afterEach(async () => {
    await b.close();
    await h.close();
  });
}

/** The contract's methods that answer with a promise, but `close` (which a closed store may be asked again). */
type RefusedWhenClosed = Exclude<
  { [K in keyof Checkpointer]-?: Checkpointer[K] extends ((...args: never[]) => Promise<unknown>) | undefined ? (undefined extends Checkpointer[K] ? never : K) : never }[keyof Checkpointer],
  'close'
>;

export function runStoreSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    let faultPoint: string | null = null;
    const faults: FaultHook = (p) => {
      if (p === faultPoint) throw new Error(`injected fault at ${p}`);
    };

    beforeEach(async () => {
      faultPoint = null;
      h = await options.make({ faults });
      store = h.store;
      await store.setup();
    });
    afterEach(async () => {
      await h.close();
    });

    test('a closed store refuses every method with STORE_CLOSED (a rejected promise, nothing written); close() may be called again', async () => {
      const id = exec();
      const row = await store.put(input(id));
      const other = await h.reopen();
      const lease: Lease = { executionId: id, holder: 'A', ttlMs: 60_000, epoch: 1, expiresAt: new Date().toISOString() };
      await store.close();
      // a Record over the contract's method names: a method added to the contract must be added here
      const calls: Record<RefusedWhenClosed, (s: Checkpointer) => Promise<unknown>> = {
        setup: (s) => s.setup(),
        put: (s) => s.put(input(id, { prevId: row.id })),
        recordInterrupt: (s) => s.recordInterrupt(pauseRow(id), { reason: 'r', context: null }),
        claimInterrupt: (s) => s.claimInterrupt({ executionId: id, checkpointId: row.id }),
        recordDecision: (s) => s.recordDecision(decisionFor(id, row.id)),
        listDecisions: (s) => s.listDecisions(),
        getDecision: (s) => s.getDecision(id, row.id),
        acquireLease: (s) => s.acquireLease(id, { holder: 'A', ttlMs: 60_000 }),
        renewLease: (s) => s.renewLease(lease),
        releaseLease: (s) => s.releaseLease(lease),
        getLease: (s) => s.getLease(id),
        cancel: (s) => s.cancel(id),
        getPendingInterrupt: (s) => s.getPendingInterrupt(id),
        listPendingInterrupts: (s) => s.listPendingInterrupts(),
        latest: (s) => s.latest(id),
        getById: (s) => s.getById(row.id),
        list: (s) => s.list(id),
        // the row's state is cached: a closed store refuses before it looks
        readState: (s) => s.readState(row),
        listExecutions: (s) => s.listExecutions(),
        getIdempotent: (s) => s.getIdempotent(id, 'k'),
        putIdempotent: (s) => s.putIdempotent(id, 'k', 1),
        listIdempotent: (s) => s.listIdempotent(id),
        deleteExecution: (s) => s.deleteExecution(id),
        prune: (s) => s.prune({ olderThan: new Date(Date.now() + 60_000), includeUnsynced: true }),
        fetchUnsynced: (s) => s.fetchUnsynced({ limit: 10, maxBytes: 1_000_000 }),
        applyResults: (s) => s.applyResults({ synced: [row.id] }),
        markSynced: (s) => s.markSynced([]),
        markQuarantined: (s) => s.markQuarantined({}),
        outboxStats: (s) => s.outboxStats(),
        listQuarantined: (s) => s.listQuarantined(),
        importRows: (s) => s.importRows({ checkpoints: [], pending: null, idempotency: [] }),
        getMeta: (s) => s.getMeta('k'),
        setMeta: (s) => s.setMeta('k', 'v'),
      };
      try {
        for (const [name, call] of Object.entries(calls)) {
          let answer: Promise<unknown> | undefined;
          expect(() => (answer = call(store)), `${name} throws instead of rejecting`).not.toThrow();
          await expectCode(answer!, 'STORE_CLOSED').catch((e: Error) => {
            throw new Error(`${name}: ${e.message}`);
          });
        }
        await store.close();
        // nothing was written: the other handle sees the one row, unsynced, and no note
        expect((await other.list(id)).map((r) => r.id)).toEqual([row.id]);
        expect((await other.fetchUnsynced({ limit: 10, maxBytes: 1_000_000 })).map((e) => e.id)).toEqual([row.id]);
        expect(await other.getMeta('k')).toBeNull();
        expect(await other.getIdempotent(id, 'k')).toEqual({ hit: false });
      } finally {
        await other.close();
      }
    });

    test('setup is idempotent', async () => {
      await store.setup();
      await store.setup();
      expect(store.writerId).toMatch(/\S/);
    });

    test('put assigns seq 0,1,2… per execution and latest/getById/list read them back', async () => {
      const a = exec();
      const b = exec();
      const r0 = await store.put(input(a));
      const r1 = await store.put(input(a, { nodeId: 'turn:0/tool:x', step: 'tool_call', nodeInput: { x: 1 } }));
      const b0 = await store.put(input(b));
      expect([r0.seq, r1.seq, b0.seq]).toEqual([0, 1, 0]);
      expect(r1.writerId).toBe(store.writerId);
      expect((await store.latest(a))?.id).toBe(r1.id);
      expect(await store.getById(r1.id)).toEqual(r1);
      expect((await store.list(a)).map((r) => r.id)).toEqual([r0.id, r1.id]);
      expect(await store.latest('nope')).toBeNull();
      expect(await store.getById(uuidv7())).toBeNull();
    });

    test('list pages by seq with cursors over 1,200 rows, both directions, no fixed limit', async () => {
      const a = exec();
      const ids: string[] = [];
      for (let i = 0; i < 1200; i++) {
        ids.push((await store.put(input(a, { turn: i, nodeId: `turn:${i}`, state: { turn: i } }))).id);
      }
      expect((await store.list(a)).length).toBe(1200);
      const seen: string[] = [];
      let after = -1;
      for (;;) {
        const page = await store.list(a, { afterSeq: after, limit: 250 });
        if (!page.length) break;
        seen.push(...page.map((r) => r.id));
        after = page[page.length - 1].seq;
      }
      expect(seen).toEqual(ids);
      const back: number[] = [];
      let before: number | undefined;
      for (;;) {
        const page = await store.list(a, { beforeSeq: before, limit: 500, order: 'desc' });
        if (!page.length) break;
        back.push(...page.map((r) => r.seq));
        before = page[page.length - 1].seq;
      }
      expect(back).toEqual([...Array(1200).keys()].reverse());
    });

    test('reusing an id fails with DUPLICATE_ID and leaves the stored row and seq unchanged', async () => {
      const a = exec();
      const first = await store.put(input(a, { nodeInput: { v: 1 } }));
      await expectCode(store.put(input(a, { id: first.id, nodeInput: { v: 2 } })), 'DUPLICATE_ID');
      await expectCode(store.put(input(exec(), { id: first.id })), 'DUPLICATE_ID');
      expect(await store.getById(first.id)).toEqual(first);
      const next = await store.put(input(a));
      expect(next.seq).toBe(1);
    });

    test('32 runs putting at once: every row lands, each run gap-free in its own order, each answer the stored row', async () => {
      const runs = Array.from({ length: 32 }, () => exec());
      const answers = await Promise.all(
        runs.map(async (id, r) => {
          const rows = [];
          let prevId: string | null = null;
          for (let i = 0; i < 5; i++) {
            const row = await store.put(input(id, { prevId, turn: i, nodeId: `turn:${i}`, state: { messages: [{ role: 'user', content: `run ${r} turn ${i}` }], turn: i } }));
            rows.push(row);
            prevId = row.id;
          }
          return rows;
        }),
      );
      for (const [r, id] of runs.entries()) {
        expect(answers[r].map((row) => [row.seq, row.nodeId])).toEqual([0, 1, 2, 3, 4].map((i) => [i, `turn:${i}`]));
        expect(await store.list(id)).toEqual(answers[r]);
        expect(await store.readState(answers[r][4])).toEqual({ messages: [{ role: 'user', content: `run ${r} turn 4` }], turn: 4 });
      }
      expect((await store.outboxStats()).pendingCount).toBe(32 * 5);
    });

    test('one failing put among concurrent valid ones fails alone (invalid row, reused id, gone execution, lost lease) and writes nothing', async () => {
      const fenced = exec();
      const lost = await store.acquireLease(fenced, { holder: 'A', ttlMs: 60_000 });
      await store.releaseLease(lost);
      await store.acquireLease(fenced, { holder: 'B', ttlMs: 60_000 });
      const taken = await store.put(input(exec()));
      const valid = Array.from({ length: 8 }, () => exec());
      const calls = [
        ...valid.slice(0, 2).map((id) => store.put(input(id))),
        store.put(input(exec(), { turn: -1 })),
        ...valid.slice(2, 4).map((id) => store.put(input(id))),
        store.put(input(exec(), { id: taken.id })),
        ...valid.slice(4, 6).map((id) => store.put(input(id))),
        store.put(input(exec(), { prevId: uuidv7() })),
        store.put(input(fenced), { lease: lost }),
        ...valid.slice(6).map((id) => store.put(input(id))),
      ];
      const settled = await Promise.allSettled(calls);
      const codes = settled.map((s) => (s.status === 'fulfilled' ? 'ok' : (s.reason as { code?: string }).code));
      expect(codes).toEqual(['ok', 'ok', 'INVALID_ROW', 'ok', 'ok', 'DUPLICATE_ID', 'ok', 'ok', 'EXECUTION_GONE', 'LEASE_LOST', 'ok', 'ok']);
      for (const id of valid) expect((await store.list(id)).map((r) => r.seq)).toEqual([0]);
      expect(await store.list(fenced)).toEqual([]);
      expect(await store.getById(taken.id)).toEqual(taken);
      expect((await store.outboxStats()).pendingCount).toBe(1 + valid.length);
    });

    test('puts to one execution issued at once land in the order they were issued, seq 0,1,2…', async () => {
      const a = exec();
      const rows = await Promise.all(Array.from({ length: 12 }, (_, i) => store.put(input(a, { turn: i, nodeId: `turn:${i}`, state: { turn: i } }))));
      expect(rows.map((r) => r.seq)).toEqual([...Array(12).keys()]);
      expect((await store.list(a)).map((r) => r.nodeId)).toEqual(rows.map((r) => r.nodeId));
      expect(await store.readState(rows[11])).toEqual({ turn: 11 });
    });

    test('readState rebuilds the full state of every row through its snapshot chain', async () => {
      const a = exec();
      const states: State[] = [];
      let messages: State['messages'] & unknown[] = [];
      const rows = [];
      for (let i = 0; i < 60; i++) {
        messages = i % 17 === 16 ? messages.slice(0, 3) : [...messages, { role: 'assistant', content: `m${i}` }];
        const s: State = { messages, turn: i, ...(i % 5 ? { toolName: `t${i}` } : {}) };
        states.push(s);
        rows.push(await store.put(input(a, { turn: i, nodeId: `turn:${i}`, state: s })));
      }
      expect(rows[0].state.kind).toBe('full');
      expect(rows.some((r) => r.state.kind === 'delta')).toBe(true);
      for (let i = 0; i < rows.length; i += 7) expect(await store.readState(rows[i])).toEqual(states[i]);
      expect(await store.readState(rows[59])).toEqual(states[59]);
    });

    test('codec defect: a message edited in place between two puts is stored as it was at each put, on every handle', async () => {
      const a = exec();
      const msg: { role: string; content: string } = { role: 'user', content: 'deploy to staging' };
      const big = { role: 'system', content: 'policy '.repeat(200) };
      const r0 = await store.put(input(a, { state: { messages: [big, msg], turn: 0 } }));
      // the caller edits its own object after the put: row 0 must not change
      msg.content = 'deploy to prod';
      expect(((await store.readState(r0)).messages as { content: string }[])[1].content).toBe('deploy to staging');
      const r1 = await store.put(input(a, { turn: 1, state: { messages: [big, msg], turn: 1 } }));
      const other = await h.reopen();
      try {
        for (const reader of [store, other]) {
          expect(((await reader.readState(r0)).messages as { content: string }[])[1].content).toBe('deploy to staging');
          expect(((await reader.readState(r1)).messages as { content: string }[])[1].content).toBe('deploy to prod');
        }
        // an edit after the last put changes nothing either, for the writer's next row
        msg.content = 'edited again, never put';
        const r2 = await store.put(input(a, { turn: 2, state: { messages: [big, { role: 'user', content: 'deploy to prod' }], turn: 2 } }));
        for (const reader of [store, other]) {
          expect(((await reader.readState(r2)).messages as { content: string }[])[1].content).toBe('deploy to prod');
        }
      } finally {
        await other.close();
      }
    });

    test('codec defect: readState returns frozen state that no reader can change for another', async () => {
      const a = exec();
      const r0 = await store.put(input(a, { state: { messages: [{ role: 'user', content: 'hi' }], turn: 0, note: { k: 1 } } }));
      const other = await h.reopen();
      try {
        for (const reader of [store, other]) {
          const s = await reader.readState(r0);
          expect(Object.isFrozen(s)).toBe(true);
          expect(Object.isFrozen(s.messages)).toBe(true);
          expect(Object.isFrozen((s.messages as object[])[0])).toBe(true);
          expect(Object.isFrozen(s.note)).toBe(true);
          expect(() => (s.messages as unknown[]).push({ role: 'user', content: 'x' })).toThrow(TypeError);
          expect(() => {
            (s.messages as { content: string }[])[0].content = 'changed';
          }).toThrow(TypeError);
          expect(await reader.readState(r0)).toEqual({ messages: [{ role: 'user', content: 'hi' }], turn: 0, note: { k: 1 } });
        }
        // the next put (on the cached cursor) still encodes against what was stored
        const r1 = await store.put(
          input(a, {
            turn: 1,
            state: {
              messages: [
                { role: 'user', content: 'hi' },
                { role: 'assistant', content: 'yo' },
              ],
              turn: 1,
            },
          }),
        );
        expect(await other.readState(r1)).toEqual({
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'yo' },
          ],
          turn: 1,
        });
      } finally {
        await other.close();
      }
    });

    test('codec defect: a non-array `messages` key is an ordinary field, kept on decode (full rows and deltas)', async () => {
      const a = exec();
      const states: State[] = [
        { messages: 'not a list', turn: 0 },
        { messages: { summary: 'compacted' }, turn: 1 },
        { messages: [{ role: 'user', content: 'now a list' }], turn: 2 },
        { messages: null, turn: 3 },
        { messages: 7, turn: 4, extra: true },
      ];
      const rows = [];
      for (const [i, s] of states.entries()) rows.push(await store.put(input(a, { turn: i, state: s })));
      const other = await h.reopen();
      try {
        for (const [i, r] of rows.entries()) {
          expect(await store.readState(r)).toEqual(states[i]);
          expect(await other.readState(r)).toEqual(states[i]);
        }
        // a delta chain where `messages` stays a field
        const b = exec();
        const chain: State[] = [];
        for (let i = 0; i < 6; i++) chain.push({ messages: { summary: `part ${i}`, long: 'x'.repeat(400) }, turn: i, big: 'y'.repeat(2000) });
        const brows = [];
        for (const [i, s] of chain.entries()) brows.push(await store.put(input(b, { turn: i, state: s })));
        expect(brows.some((r) => r.state.kind === 'delta')).toBe(true);
        for (const [i, r] of brows.entries()) expect(await other.readState(r)).toEqual(chain[i]);
      } finally {
        await other.close();
      }
    });

    test('two handles taking turns on one execution: each writes after the other, never on a stale row', async () => {
      // each handle caches the newest row it wrote; the other handle's write makes that cache stale
      const other = await h.reopen();
      try {
        const a = exec();
        const states: State[] = [];
        const rows = [];
        let messages: State['messages'] & unknown[] = [];
        for (let i = 0; i < 24; i++) {
          messages = [...messages, { role: 'assistant', content: `m${i}` }];
          const s: State = { messages, turn: i };
          states.push(s);
          // two writes by one handle (the second on its own cached row), then two by the other
          const by = Math.floor(i / 2) % 2 === 0 ? store : other;
          rows.push(await by.put(input(a, { turn: i, nodeId: `turn:${i}`, state: s })));
        }
        expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
        for (const r of rows) if (r.state.kind === 'delta') expect(r.state.prev).toBe(rows[r.seq - 1].id);
        for (const [i, r] of rows.entries()) {
          expect(await store.readState(r)).toEqual(states[i]);
          expect(await other.readState(r)).toEqual(states[i]);
        }
        expect((await store.list(a)).map((r) => r.id)).toEqual(rows.map((r) => r.id));
      } finally {
        await other.close();
      }
    });

    test('recordInterrupt writes the checkpoint and the pending row together', async () => {
      const a = exec();
      await store.put(input(a));
      const { checkpoint, pending } = await store.recordInterrupt(pauseRow(a), {
        reason: 'manager_approval',
        context: { order: '1042', amount: 50000 },
      });
      expect(checkpoint.status).toBe('interrupted');
      expect(pending).toMatchObject({ executionId: a, checkpointId: checkpoint.id, reason: 'manager_approval' });
      expect(await store.getPendingInterrupt(a)).toEqual(pending);
      expect((await store.latest(a))?.id).toBe(checkpoint.id);
    });

    test('recordInterrupt writes neither row when it fails between them', async () => {
      const a = exec();
      const first = await store.put(input(a));
      faultPoint = 'store.recordInterrupt.betweenRows';
      await expect(store.recordInterrupt(pauseRow(a), { reason: 'r', context: null })).rejects.toThrow(/injected fault/);
      faultPoint = null;
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.latest(a))?.id).toBe(first.id);
      expect((await store.list(a)).length).toBe(1);
      const stats = await store.outboxStats();
      expect(stats.pendingCount).toBe(1);
      // the execution stays writable with a gap-free seq
      expect((await store.put(input(a))).seq).toBe(1);
    });

    test('a second open pause fails with PAUSE_EXISTS and writes nothing', async () => {
      const a = exec();
      await store.recordInterrupt(pauseRow(a), { reason: 'first', context: null });
      const before = await store.list(a);
      await expectCode(store.recordInterrupt(pauseRow(a), { reason: 'second', context: null }), 'PAUSE_EXISTS');
      expect(await store.list(a)).toEqual(before);
      expect((await store.getPendingInterrupt(a))?.reason).toBe('first');
    });

    test('claimInterrupt returns the pending row once, then null; `next` commits with the claim', async () => {
      const a = exec();
      const { pending } = await store.recordInterrupt(pauseRow(a), { reason: 'r', context: { k: 1 } });
      const next = input(a, { nodeId: 'turn:0/tool:refund', step: 'tool_call', state: { messages: [], resumes: [true] } });
      const claim = await store.claimInterrupt(pending, { next });
      expect(claim?.pending).toEqual(pending);
      expect(claim?.checkpoint?.seq).toBe(1);
      expect(await store.claimInterrupt(pending)).toBeNull();
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect(await store.claimInterrupt({ executionId: exec(), checkpointId: pending.checkpointId })).toBeNull();
    });

    test('stale resumer defect: a claim of a pause that was answered meanwhile returns null and leaves the later pause open', async () => {
      const a = exec();
      const { pending: p1 } = await store.recordInterrupt(pauseRow(a), { reason: 'deploy to prod?', context: null });
      // resumer B answers P1 (on another handle) and the run reaches P2
      const other = await h.reopen();
      try {
        const b = await other.claimInterrupt(p1, {
          next: input(a, { nodeId: 'turn:0/tool:refund', step: 'tool_call', state: { messages: [], resumes: [true] } }),
        });
        expect(b?.pending.checkpointId).toBe(p1.checkpointId);
        const { pending: p2 } = await other.recordInterrupt(pauseRow(a), { reason: 'drop the database?', context: null });
        const before = await store.list(a);
        const outbox = (await store.outboxStats()).pendingCount;
        // resumer A read P1 before all that; its claim names P1 and must not take P2
        const stale = await store.claimInterrupt(p1, {
          next: input(a, { nodeId: 'turn:0/tool:refund', step: 'tool_call', state: { messages: [], resumes: [false] } }),
        });
        expect(stale).toBeNull();
        expect(await store.getPendingInterrupt(a)).toEqual(p2);
        expect(await store.list(a)).toEqual(before);
        expect((await store.outboxStats()).pendingCount).toBe(outbox);
        // P2 is still claimable by its own name
        expect((await store.claimInterrupt(p2))?.pending).toEqual(p2);
      } finally {
        await other.close();
      }
    });

    test('listPendingInterrupts pages by execution id', async () => {
      const ids = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e'].map((x) => `${x}-${exec()}`);
      for (const id of ids) await store.recordInterrupt(pauseRow(id), { reason: 'r', context: null });
      const p1 = await store.listPendingInterrupts({ limit: 2 });
      const p2 = await store.listPendingInterrupts({ afterExecutionId: p1[1].executionId, limit: 2 });
      const p3 = await store.listPendingInterrupts({ afterExecutionId: p2[1].executionId, limit: 2 });
      expect([...p1, ...p2, ...p3].map((p) => p.executionId)).toEqual([...ids].sort());
    });

    test('idempotency entries round-trip, a stored null is a hit, the first result wins', async () => {
      const a = exec();
      expect(await store.getIdempotent(a, 'k')).toEqual({ hit: false });
      await store.putIdempotent(a, 'k', null);
      expect(await store.getIdempotent(a, 'k')).toEqual({ hit: true, result: null });
      await store.putIdempotent(a, 'obj', { charge: 'ch_1', amount: 20 });
      const again = await store.putIdempotent(a, 'obj', { charge: 'ch_2' });
      expect(again.result).toEqual({ charge: 'ch_1', amount: 20 });
      expect(await store.getIdempotent(a, 'obj')).toEqual({ hit: true, result: { charge: 'ch_1', amount: 20 } });
      expect(await store.getIdempotent(exec(), 'obj')).toEqual({ hit: false });
      expect((await store.listIdempotent(a)).map((e) => e.key).sort()).toEqual(['k', 'obj']);
    });

    test('prune deletes old finished runs and never a paused or unfinished run', async () => {
      const old = new Date(Date.now() - 3600_000).toISOString();
      const done = exec();
      const failed = exec();
      const paused = exec();
      const running = exec();
      const recent = exec();
      for (const e of [done, failed, paused, running, recent]) {
        await store.put(input(e, { createdAt: old }));
        await store.putIdempotent(e, 'charge', { ok: true });
      }
      await store.put(marker(done, 'completed', old));
      await store.put(marker(failed, 'failed', old));
      await store.recordInterrupt({ ...pauseRow(paused), createdAt: old }, { reason: 'r', context: null });
      await store.put(marker(recent, 'completed'));

      const kept = await store.prune({ olderThan: new Date(Date.now() - 60_000) });
      expect(kept).toMatchObject({ executions: 0, keptUnsynced: 2 });

      const synced = (await store.fetchUnsynced({ limit: 10_000, maxBytes: 1e9 })).map((e) => e.id);
      await store.markSynced(synced);
      const res = await store.prune({ olderThan: new Date(Date.now() - 60_000) });
      expect(res).toEqual({ executions: 2, checkpoints: 4, idempotency: 2, keptUnsynced: 0 });
      expect(await store.list(done)).toEqual([]);
      expect(await store.list(failed)).toEqual([]);
      expect((await store.list(paused)).length).toBe(2);
      expect(await store.getPendingInterrupt(paused)).not.toBeNull();
      expect(await store.getIdempotent(paused, 'charge')).toEqual({ hit: true, result: { ok: true } });
      expect((await store.list(running)).length).toBe(1);
      expect(await store.getIdempotent(running, 'charge')).toMatchObject({ hit: true });
      expect((await store.list(recent)).length).toBe(2);
    });

    test('prune with includeUnsynced also drops finished runs the plane has not acked', async () => {
      const old = new Date(Date.now() - 3600_000).toISOString();
      const done = exec();
      await store.put(input(done, { createdAt: old }));
      await store.put(marker(done, 'completed', old));
      const res = await store.prune({ olderThan: new Date(), includeUnsynced: true });
      expect(res.executions).toBe(1);
      expect((await store.outboxStats()).pendingCount).toBe(0);
    });

    test('deleteExecution touches only its execution and queues the deletion', async () => {
      const a = exec();
      const b = exec();
      await store.put(input(a));
      await store.recordInterrupt(pauseRow(a), { reason: 'r', context: null });
      await store.putIdempotent(a, 'k', 1);
      await store.put(input(b));
      await store.putIdempotent(b, 'k', 2);
      const res = await store.deleteExecution(a);
      expect(res).toEqual({ checkpoints: 2, pending: 1, idempotency: 1 });
      expect(await store.list(a)).toEqual([]);
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.list(b)).length).toBe(1);
      expect(await store.getIdempotent(b, 'k')).toEqual({ hit: true, result: 2 });
      const kinds = (await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => `${e.kind}:${e.executionId === a ? 'a' : 'b'}`);
      expect(kinds).toEqual(['checkpoint:b', 'idempotency:b', 'execution_deleted:a']);
      expect((await store.put(input(a))).seq).toBe(0);
    });

    test('a write into a deleted execution defect: a put naming a row that another handle deleted is refused with EXECUTION_GONE, never started again at seq 0', async () => {
      const a = exec();
      const r0 = await store.put(input(a, { prevId: null }));
      const r1 = await store.put(input(a, { prevId: r0.id, turn: 1 }));
      const other = await h.reopen();
      try {
        await other.deleteExecution(a);
      } finally {
        await other.close();
      }
      const outbox = (await store.outboxStats()).pendingCount;
      // the writer's cached cursor still names r1: the write must not follow it into an empty execution
      await expectCode(store.put(input(a, { prevId: r1.id, turn: 2 })), 'EXECUTION_GONE');
      await expectCode(store.recordInterrupt({ ...pauseRow(a), prevId: r1.id }, { reason: 'r', context: null }), 'EXECUTION_GONE');
      expect(await store.list(a)).toEqual([]);
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.listExecutions()).map((e) => e.executionId)).not.toContain(a);
      expect((await store.outboxStats()).pendingCount).toBe(outbox);
      // a fresh run under the same id is still allowed, and says so
      expect((await store.put(input(a, { prevId: null }))).seq).toBe(0);
    });

    test('a write into a pruned execution defect: a put naming the pruned run-end marker is refused with EXECUTION_GONE', async () => {
      const a = exec();
      const r0 = await store.put(input(a));
      const end = await store.put({ ...marker(a, 'failed', '2020-01-01T00:00:00.000Z'), prevId: r0.id });
      expect((await store.prune({ olderThan: new Date('2021-01-01T00:00:00.000Z'), includeUnsynced: true })).executions).toBe(1);
      await expectCode(store.put(input(a, { prevId: end.id, turn: 1 })), 'EXECUTION_GONE');
      expect(await store.list(a)).toEqual([]);
    });

    test("prevId: null refuses an execution that has rows (EXECUTION_EXISTS); an older row that still exists, on any handle, is accepted; another execution's row is gone", async () => {
      const a = exec();
      const r0 = await store.put(input(a));
      const r1 = await store.put(input(a, { turn: 1 }));
      await expectCode(store.put(input(a, { prevId: null })), 'EXECUTION_EXISTS');
      expect((await store.list(a)).length).toBe(2);
      // a supervisor names its own tool row while a worker wrote after it: still there, so accepted
      expect((await store.put(input(a, { prevId: r0.id, turn: 2 }))).seq).toBe(2);
      const other = await h.reopen();
      try {
        expect((await other.put(input(a, { prevId: r1.id, turn: 3 }))).seq).toBe(3);
        expect((await store.put(input(a, { prevId: r1.id, turn: 4 }))).seq).toBe(4);
        const b = exec();
        const b0 = await other.put(input(b));
        await expectCode(store.put(input(a, { prevId: b0.id, turn: 5 })), 'EXECUTION_GONE');
        expect((await store.list(a)).length).toBe(5);
      } finally {
        await other.close();
      }
    });

    test('every change queues one outbox event, in order, until synced or quarantined', async () => {
      const a = exec();
      const c0 = await store.put(input(a));
      const { checkpoint: p, pending: open } = await store.recordInterrupt(pauseRow(a), { reason: 'r', context: null });
      await store.claimInterrupt(open);
      await store.putIdempotent(a, 'k', 'v');
      await store.putIdempotent(a, 'k', 'ignored');
      const entries = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(entries.map((e) => e.kind)).toEqual(['checkpoint', 'checkpoint', 'interrupt_opened', 'interrupt_claimed', 'idempotency']);
      expect(entries[0].id).toBe(c0.id);
      expect(entries[0].event).toMatchObject({ kind: 'checkpoint', row: c0 });
      expect(entries[1].event).toMatchObject({ kind: 'checkpoint', row: p });
      expect(entries[3].event).toMatchObject({ kind: 'interrupt_claimed', checkpointId: p.id, writerId: store.writerId });
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
      await store.markSynced(left.map((e) => e.id));
      expect((await store.outboxStats()).pendingCount).toBe(0);
    });

    test('importRows inserts missing rows as synced, never overwrites, and skips a stale pause', async () => {
      const src = exec();
      const rows = [await store.put(input(src)), await store.put(input(src, { nodeId: 'turn:0/tool:x', step: 'tool_call', state: { messages: [], t: 1 } }))];
      const { checkpoint: paused, pending } = await store.recordInterrupt(pauseRow(src), { reason: 'r', context: { a: 1 } });
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
        expect(res).toMatchObject({ inserted: 3, skipped: 0, diverged: [], withheld: 0, pendingImported: true, stalePendingRemoved: [], idempotencyInserted: 1 });
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
        expect(res3.diverged).toEqual([{ executionId: src, seq: 3, reason: 'seq_taken', localId: cont.id, incomingId: clash.id }]);
        expect((await other.store.latest(src))?.id).toBe(cont.id);
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
      await expectCode(store.importRows({ checkpoints: [{ id: 'x' } as never], pending: null, idempotency: [] }), 'INVALID_ROW');
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

    test('outbox byte counts are UTF-8 bytes of each event as sent, for every kind', async () => {
      const a = exec();
      await store.put(input(a, { nodeInput: '\u6F22\u5B57 \u{1F600}' }));
      const { pending } = await store.recordInterrupt(pauseRow(a), { reason: '\u627F\u8A8D\u{1F64F}', context: { note: '\u{1F4B8}' } });
      await store.claimInterrupt(pending);
      await store.putIdempotent(a, '\u9375', '\u7D50\u679C\u{1F389}');
      const gone = `${a}-\u6D88`;
      await store.put(input(gone));
      await store.deleteExecution(gone);
      const entries = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
      expect(entries.map((e) => e.kind)).toEqual(['checkpoint', 'checkpoint', 'interrupt_opened', 'interrupt_claimed', 'idempotency', 'execution_deleted']);
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

    test('listExecutions reports running, paused, completed and failed runs', async () => {
      const ids = { running: `a-${exec()}`, paused: `b-${exec()}`, completed: `c-${exec()}`, failed: `d-${exec()}` };
      await store.put(input(ids.running));
      await store.recordInterrupt(pauseRow(ids.paused), { reason: 'r', context: null });
      await store.put(input(ids.completed));
      await store.put(marker(ids.completed, 'completed'));
      await store.put(marker(ids.failed, 'failed'));
      const all = await store.listExecutions();
      const byId = Object.fromEntries(all.map((e) => [e.executionId, e.state]));
      expect(byId).toEqual({ [ids.running]: 'running', [ids.paused]: 'paused', [ids.completed]: 'completed', [ids.failed]: 'failed' });
      const page = await store.listExecutions({ afterExecutionId: ids.paused, limit: 1 });
      expect(page.map((e) => e.executionId)).toEqual([ids.completed]);
    });
  });
  runLeaseSuite(options);
  runCancelSuite(options);
  runDecisionSuite(options);
}
