/**
 * The store contract's conformance suite, part: puts and reads: seq assignment, paging, duplicate ids, concurrent puts and their order, readState.
 * Run per backend by runStoreSuite (suite.ts), under the same describe title.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import { uuidv7 } from '../../../shared/ids.js';
import type { State } from '../../../shared/codec.js';
import type { Json } from '../../../shared/json.js';
import { sumUsage } from '../../../shared/usage.js';
import {
  contractTest,
  exec,
  expectCode,
  input,
  withStore,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';

export function runWriteSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    withStore(options, (s) => ({ h, store } = s));

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

    test('usageTotals sums nodeOutput.usage over every row of each run asked for, as sumUsage over list() does; a run without usage or unknown has a zero total', async () => {
      const a = exec();
      const b = exec();
      const quiet = exec();
      const call = (i: number, over: Record<string, Json> = {}): Json => ({
        model: i % 2 ? 'm-odd' : 'm-even',
        agentPath: 'agent:test',
        turn: i,
        inputTokens: 10 + i,
        outputTokens: 3,
        cachedInputTokens: i % 3 ? null : 4,
        finishReason: 'stop',
        ...over,
      });
      const outputs: Json[] = [];
      for (let i = 0; i < 120; i++)
        outputs.push(i % 3 === 0 ? { text: `reply ${i}`, usage: [call(i)] } : { text: `tool ${i}` });
      outputs.push(
        // shapes that carry no usage, or usage entries that count as zero or unknown
        'a string',
        ['an', 'array'],
        null,
        { usage: 'not an array' },
        { usage: [call(200, { model: 7, inputTokens: -5, outputTokens: 'x' }), 'not an entry', call(201)] },
        { text: 'a reply', usage: [call(202)] },
        { output: { done: true }, usage: [call(203), call(204)] },
      );
      let prev: string | null = null;
      for (const [i, nodeOutput] of outputs.entries())
        prev = (await store.put(input(a, { prevId: prev, turn: i, nodeId: `turn:${i}`, nodeOutput }))).id;
      await store.put(input(b, { nodeOutput: { usage: [call(1), call(2)] } }));
      await store.put(input(quiet, { nodeOutput: { text: 'no model' } }));

      const totals = await store.usageTotals([a, b, quiet, 'not-a-run']);
      expect([...totals.keys()]).toEqual([a, b, quiet, 'not-a-run']);
      expect(totals.get(a)).toEqual(sumUsage(await store.list(a)));
      expect(totals.get(a)!.calls).toBe(40 + 2 + 1 + 2);
      expect(totals.get(a)!.models.unknown).toBe(1);
      expect(totals.get(b)).toEqual(sumUsage(await store.list(b)));
      expect(totals.get(b)!.calls).toBe(2);
      const zero = { calls: 0, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, models: {}, byModel: {} };
      expect(totals.get(quiet)).toEqual(zero);
      expect(totals.get('not-a-run')).toEqual(zero);
      expect(await store.usageTotals([])).toEqual(new Map());
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

    test('list filtered by step: only that step’s rows, in seq order both ways, paged by the same cursors', async () => {
      const a = exec();
      const steps = ['llm_call', 'hitl_pause', 'tool_call', 'hitl_pause', 'llm_call', 'hitl_pause'] as const;
      for (const [i, step] of steps.entries()) await store.put(input(a, { turn: i, nodeId: `turn:${i}`, step }));
      await store.put(input(exec(), { step: 'hitl_pause' }));
      expect((await store.list(a, { step: 'hitl_pause' })).map((r) => r.seq)).toEqual([1, 3, 5]);
      expect((await store.list(a, { step: 'hitl_pause', order: 'desc', limit: 2 })).map((r) => r.seq)).toEqual([5, 3]);
      expect((await store.list(a, { step: 'hitl_pause', order: 'desc', beforeSeq: 3 })).map((r) => r.seq)).toEqual([1]);
      expect((await store.list(a, { step: 'hitl_pause', afterSeq: 1, limit: 1 })).map((r) => r.seq)).toEqual([3]);
      expect(await store.list(a, { step: 'run_end' })).toEqual([]);
    });

    test('list refuses bad options before reading, naming every problem (INVALID_OPTIONS)', async () => {
      const err = await store
        .list(exec(), { step: 'bogus' as never, limit: 0, afterSeq: 1.5, order: 'up' as never })
        .then(
          () => null,
          (e: { code: string; details: { problems: string[] } }) => e,
        );
      expect(err?.code).toBe('INVALID_OPTIONS');
      const problems = err?.details.problems ?? [];
      expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(['afterSeq', 'limit', 'order', 'step']);
      await expectCode(store.list(exec(), { limit: -1 }), 'INVALID_OPTIONS');
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
            const row = await store.put(
              input(id, {
                prevId,
                turn: i,
                nodeId: `turn:${i}`,
                state: { messages: [{ role: 'user', content: `run ${r} turn ${i}` }], turn: i },
              }),
            );
            rows.push(row);
            prevId = row.id;
          }
          return rows;
        }),
      );
      for (const [r, id] of runs.entries()) {
        expect(answers[r].map((row) => [row.seq, row.nodeId])).toEqual([0, 1, 2, 3, 4].map((i) => [i, `turn:${i}`]));
        expect(await store.list(id)).toEqual(answers[r]);
        expect(await store.readState(answers[r][4])).toEqual({
          messages: [{ role: 'user', content: `run ${r} turn 4` }],
          turn: 4,
        });
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
      expect(codes).toEqual([
        'ok',
        'ok',
        'INVALID_ROW',
        'ok',
        'ok',
        'DUPLICATE_ID',
        'ok',
        'ok',
        'EXECUTION_GONE',
        'LEASE_LOST',
        'ok',
        'ok',
      ]);
      for (const id of valid) expect((await store.list(id)).map((r) => r.seq)).toEqual([0]);
      expect(await store.list(fenced)).toEqual([]);
      expect(await store.getById(taken.id)).toEqual(taken);
      expect((await store.outboxStats()).pendingCount).toBe(1 + valid.length);
    });

    test('puts to one execution issued at once land in the order they were issued, seq 0,1,2…', async () => {
      const a = exec();
      const rows = await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.put(input(a, { turn: i, nodeId: `turn:${i}`, state: { turn: i } }))),
      );
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
  });
}
