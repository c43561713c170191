/**
 * WaymarkSaver at its edges: a thread deleted while its graph runs in another
 * process, two threads whose ids map to one execution started at once, and
 * thread ids no execution can be named by. Real SQLite files (and real
 * Postgres when it is up), real child processes.
 */
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Annotation, Command, END, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ErrorCode, hasCode } from '../../shared/errors.js';
import type { Checkpointer } from '../../client/checkpointer.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';
import { checkpoint, meta } from '../helpers/graph-checkpoint.js';

const DELETE_CHILD = new URL('./delete-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-lg-edges-');
const pgOk = await pgReady('langgraph edges: postgres');
let db: TestDatabase | null = null;
let n = 0;
beforeAll(async () => {
  if (pgOk) db = await createTestDatabase('waymark_lg_edges');
});
afterAll(async () => {
  await db?.drop();
  tmp.cleanup();
});

describe('a thread deleted while its graph runs in another process', () => {
  it("the graph's next checkpoint is refused with EXECUTION_GONE: the thread stays deleted, is never brought back half-empty, and no later node runs", async () => {
    const path = tmp.file('deleted.db');
    const effects = tmp.file('deleted.log');
    writeFileSync(effects, '');
    const saver = new WaymarkSaver(new SqliteCheckpointer({ path }));
    await saver.setup();
    const child = forkTs(DELETE_CHILD, [path, effects, 'doomed']);
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += d));
    const exited = once(child, 'exit');
    try {
      await nextMessage<{ at?: string }>(child, (m) => m.at === 'two');
      expect((await saver.store.list('doomed')).length).toBeGreaterThan(0);
      await saver.deleteThread('doomed');
      expect(await saver.store.list('doomed')).toEqual([]);
      const done = nextMessage<{ done?: { ok?: boolean; code?: string; message?: string } }>(
        child,
        (m) => m.done !== undefined,
      );
      child.send({ go: true });
      const { done: outcome } = await done;
      expect(outcome, stderr).toMatchObject({ code: ErrorCode.EXECUTION_GONE });
      expect(outcome?.message).toContain('doomed');
      // nothing of the thread came back: no row, no checkpoint a later invoke would continue from
      expect(await saver.store.list('doomed')).toEqual([]);
      expect(await saver.getTuple({ configurable: { thread_id: 'doomed' } })).toBeUndefined();
      expect(readFileSync(effects, 'utf8').trim().split('\n')).toEqual(['one', 'two']);
    } finally {
      await exited;
      await saver.store.close();
    }
  });
});

const backends: { name: string; make(): Checkpointer[]; skip?: boolean }[] = [
  {
    name: 'sqlite',
    make: () => {
      const path = tmp.file(`c${++n}.db`);
      return [new SqliteCheckpointer({ path }), new SqliteCheckpointer({ path })];
    },
  },
  {
    name: 'postgres',
    make: () => {
      const schema = `lge${++n}`;
      return [
        new PostgresCheckpointer({ url: db!.url, schema, max: 2 }),
        new PostgresCheckpointer({ url: db!.url, schema, max: 2 }),
      ];
    },
    skip: !pgOk,
  },
];

for (const backend of backends) {
  describe.skipIf(backend.skip)(`thread ids that map to one execution, on ${backend.name}`, () => {
    it('thread "x|y" and the namespace "y" of thread "x" started at once (two stores): one is refused, the other keeps its execution whole', async () => {
      const [s1, s2] = backend.make();
      const a = new WaymarkSaver(s1);
      const b = new WaymarkSaver(s2);
      await a.setup();
      try {
        for (let round = 0; round < 5; round++) {
          const root = `x${round}|y`;
          const outcomes = await Promise.allSettled([
            a.put({ configurable: { thread_id: root } }, checkpoint({ who: 'root' }), meta, { who: 1 }),
            b.put({ configurable: { thread_id: `x${round}`, checkpoint_ns: 'y' } }, checkpoint({ who: 'sub' }), meta, {
              who: 1,
            }),
          ]);
          const ok = outcomes.filter((o) => o.status === 'fulfilled');
          const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
          expect(ok).toHaveLength(1);
          expect(refused).toHaveLength(1);
          expect(hasCode(refused[0].reason, ErrorCode.INVALID_GRAPH_CONFIG), String(refused[0].reason)).toBe(true);
          // the execution holds the winner's rows only, and the winner reads them back
          const rows = await s1.list(root);
          expect(rows).toHaveLength(1);
          const winner = outcomes[0].status === 'fulfilled' ? 'root' : 'sub';
          const cfg = winner === 'root' ? { thread_id: root } : { thread_id: `x${round}`, checkpoint_ns: 'y' };
          expect((await a.getTuple({ configurable: cfg }))?.checkpoint.channel_values).toEqual({ who: winner });
        }
      } finally {
        await s1.close();
        await s2.close();
      }
    });
  });
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`a cancelled thread, on ${backend.name}`, () => {
    it('is refused RUN_CANCELLED where a graph call starts, before any node runs, under every durability (under the default one its graph ran from the start); its history is still listed', async () => {
      const [store, other] = backend.make();
      await other.close();
      const saver = new WaymarkSaver(store);
      await saver.setup();
      try {
        const State = Annotation.Root({
          log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
        });
        const ran: string[] = [];
        const graph = new StateGraph(State)
          .addNode('draft', () => (ran.push('draft'), { log: ['draft'] }))
          .addNode('send', () => (ran.push('send'), { log: ['send'] }))
          .addEdge(START, 'draft')
          .addEdge('draft', 'send')
          .addEdge('send', END)
          .compile({ checkpointer: saver, interruptBefore: ['send'] });
        const config = { configurable: { thread_id: 'mail-1' } };
        await graph.invoke({ log: [] }, config);
        expect(ran).toEqual(['draft']);
        const rows = (await store.list('mail-1')).length;
        await store.cancel('mail-1', { reason: 'the customer withdrew' });
        ran.length = 0;
        for (const durability of [undefined, 'async', 'exit', 'sync'] as const) {
          for (const input of [null, { log: ['again'] }]) {
            const e = await graph
              .invoke(input, { ...config, ...(durability ? { durability } : {}) })
              .catch((err: unknown) => err);
            expect(hasCode(e, ErrorCode.RUN_CANCELLED), `${durability} ${JSON.stringify(input)}: ${String(e)}`).toBe(
              true,
            );
          }
        }
        const held = await saver.exclusive(config, (h) => graph.invoke(null, h)).catch((err: unknown) => err);
        expect(hasCode(held, ErrorCode.RUN_CANCELLED), String(held)).toBe(true);
        expect(ran).toEqual([]);
        // nothing written after the cancel marker
        expect((await store.list('mail-1')).length).toBe(rows + 1);
        // the thread's history is still there to read
        const history: unknown[] = [];
        for await (const t of saver.list(config)) history.push(t);
        expect(history.length).toBeGreaterThan(0);
      } finally {
        await store.close();
      }
    });
  });
}

describe('an interrupt answered late', () => {
  it('a late answer to the first interrupt (by its id, from a second store on the same file) does not answer the next pause; the right answer does, once', async () => {
    const path = tmp.file('late.db');
    const one = new WaymarkSaver(new SqliteCheckpointer({ path }));
    await one.setup();
    const two = new WaymarkSaver(new SqliteCheckpointer({ path }));
    const effects: string[] = [];
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = (saver: WaymarkSaver) =>
      new StateGraph(State)
        .addNode('ship', () => {
          const a = interrupt('ship?');
          effects.push(`ship ${a}`);
          return { log: [`ship ${a}`] };
        })
        .addNode('refund', () => {
          const a = interrupt('refund?');
          effects.push(`refund ${a}`);
          return { log: [`refund ${a}`] };
        })
        .addEdge(START, 'ship')
        .addEdge('ship', 'refund')
        .addEdge('refund', END)
        .compile({ checkpointer: saver });
    const cfg = { configurable: { thread_id: 'late' }, durability: 'sync' as const };
    try {
      const first = (await graph(one).invoke({ log: [] }, cfg)) as unknown as { __interrupt__: { id: string }[] };
      const shipId = first.__interrupt__[0].id;
      const second = (await graph(one).invoke(new Command({ resume: { [shipId]: 'yes' } }), cfg)) as unknown as {
        __interrupt__: { id: string; value: string }[];
      };
      expect(second.__interrupt__.map((i) => i.value)).toEqual(['refund?']);
      // the other process answers the first pause again, late
      const late = (await graph(two).invoke(new Command({ resume: { [shipId]: 'LATE' } }), cfg)) as unknown as {
        __interrupt__?: { value: string }[];
      };
      expect(late.__interrupt__?.map((i) => i.value)).toEqual(['refund?']);
      expect(effects).toEqual(['ship yes']);
      const done = await graph(two).invoke(new Command({ resume: { [second.__interrupt__[0].id]: 'no' } }), cfg);
      expect(done.log).toEqual(['ship yes', 'refund no']);
      expect(effects).toEqual(['ship yes', 'refund no']);
    } finally {
      await one.store.close();
      await two.store.close();
    }
  });
});

describe('thread ids no execution can be named by', () => {
  it('"." and ".." are refused with INVALID_GRAPH_CONFIG naming the problem, writing nothing', async () => {
    const saver = new WaymarkSaver(new SqliteCheckpointer({ path: tmp.file('dots.db') }));
    await saver.setup();
    try {
      for (const thread_id of ['.', '..']) {
        const e = await saver
          .put({ configurable: { thread_id } }, checkpoint({ a: 1 }), meta, { a: 1 })
          .catch((x) => x);
        expect(hasCode(e, ErrorCode.INVALID_GRAPH_CONFIG), String(e)).toBe(true);
        expect(e.details.problems.join(' ')).toContain("'.' or '..'");
      }
      expect(await saver.store.listExecutions()).toEqual([]);
    } finally {
      await saver.store.close();
    }
  });
});
