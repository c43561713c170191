/**
 * WaymarkSaver beyond LangGraph's validation suite: how a thread maps onto
 * waymark rows, what it refuses, and that a long agent run grows the store
 * linearly. Each case runs on a real SQLite file and on real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compareWritesSortKeys,
  writesSortKey,
  RESUME,
  type Checkpoint as GraphCheckpoint,
} from '@langchain/langgraph-checkpoint';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ErrorCode, hasCode } from '../../shared/errors.js';
import type { Checkpointer } from '../../client/checkpointer.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';
import { checkpoint, meta } from '../helpers/graph-checkpoint.js';
import { step } from '../helpers/rows.js';

const tmp = scratchDir('waymark-lg-saver-');
const pgOk = await pgReady('langgraph saver: postgres');
let db: TestDatabase | null = null;
let n = 0;
beforeAll(async () => {
  if (pgOk) db = await createTestDatabase('waymark_lg_saver');
});
afterAll(async () => {
  await db?.drop();
  tmp.cleanup();
});

const backends: { name: string; make(): Checkpointer; skip?: boolean }[] = [
  { name: 'sqlite', make: () => new SqliteCheckpointer({ path: tmp.file(`s${++n}.db`), synchronous: 'NORMAL' }) },
  {
    name: 'postgres',
    make: () => new PostgresCheckpointer({ url: db!.url, schema: `lgs${++n}`, max: 2 }),
    skip: !pgOk,
  },
];

const versionsOf = (c: GraphCheckpoint) => ({ ...c.channel_versions });

/** A graph that calls a tool `turns` times, then answers: 2 * turns + 2 supersteps, all messages appended. */
function loopGraph(saver: WaymarkSaver, turns: number) {
  const pad = 'x'.repeat(200);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (s) => {
      const done = s.messages.filter((m) => m.getType() === 'tool').length;
      return {
        messages: [
          done < turns
            ? new AIMessage({
                content: `turn ${done} ${pad}`,
                tool_calls: [{ id: `call_${done}`, name: 'count', args: { n: done } }],
              })
            : new AIMessage({ content: `finished after ${done} tools` }),
        ],
      };
    })
    .addNode('tools', async (s) => {
      const call = (s.messages.at(-1) as AIMessage).tool_calls![0];
      return { messages: [new ToolMessage({ tool_call_id: call.id!, content: `counted ${call.args.n} ${pad}` })] };
    })
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer: saver });
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`WaymarkSaver on ${backend.name}`, () => {
    const open = async () => {
      const saver = new WaymarkSaver(backend.make());
      await saver.setup();
      return saver;
    };

    it('a 200-turn agent run stores its messages linearly: the rows hold about one copy of the final conversation', async () => {
      const saver = await open();
      try {
        const app = loopGraph(saver, 200);
        const config = { configurable: { thread_id: 'long-run' }, recursionLimit: 1000 };
        await app.invoke({ messages: [new HumanMessage('count to 200')] }, config);
        const state = await app.getState(config);
        const messages = state.values.messages as BaseMessage[];
        expect(messages).toHaveLength(402);
        const rows = await saver.store.list('long-run');
        expect(rows.length).toBeGreaterThan(400);
        const stored = rows.reduce((sum, r) => sum + JSON.stringify(r.state).length, 0);
        const finalState = JSON.stringify(await saver.store.readState(rows.at(-1)!)).length;
        // a saver that stores every checkpoint whole keeps ~rows/2 copies of the conversation (quadratic)
        expect(stored).toBeLessThan(3 * finalState);
        // and what was stored is the conversation the graph had
        const fresh = loopGraph(saver, 200);
        const reread = (await fresh.getState(config)).values.messages as BaseMessage[];
        expect(reread.map((m) => m.content)).toEqual(messages.map((m) => m.content));
      } finally {
        await saver.store.close();
      }
    });

    it('one thread is one execution named by its thread id; a subgraph namespace is its own execution; deleteThread removes both and no other thread', async () => {
      const saver = await open();
      try {
        await saver.put({ configurable: { thread_id: 't1' } }, checkpoint({ a: 1 }), meta, { a: 1 });
        await saver.put({ configurable: { thread_id: 't1', checkpoint_ns: 'sub:1' } }, checkpoint({ b: 2 }), meta, {
          b: 1,
        });
        await saver.put({ configurable: { thread_id: 't10' } }, checkpoint({ c: 3 }), meta, { c: 1 });
        const ids = (await saver.store.listExecutions()).map((e) => e.executionId);
        expect(ids.sort()).toEqual(['t1', 't10', 't1|sub:1']);
        const rows = await saver.store.list('t1|sub:1');
        expect(rows[0]).toMatchObject({ step: 'graph_step', agentPath: 'langgraph/sub:1', nodeId: 'langgraph:loop' });
        const listed = [];
        for await (const t of saver.list({ configurable: { thread_id: 't1' } })) listed.push(t.config.configurable);
        expect(listed.map((c) => c?.checkpoint_ns).sort()).toEqual(['', 'sub:1']);
        await saver.deleteThread('t1');
        expect((await saver.store.listExecutions()).map((e) => e.executionId)).toEqual(['t10']);
        expect(await saver.getTuple({ configurable: { thread_id: 't10' } })).toBeDefined();
      } finally {
        await saver.store.close();
      }
    });

    it('a second resume write for the same task and checkpoint replaces the first (as in LangGraph savers); regular writes keep the first', async () => {
      const saver = await open();
      try {
        const cfg = await saver.put({ configurable: { thread_id: 'w' } }, checkpoint({ a: 1 }), meta, { a: 1 });
        await saver.putWrites(
          cfg,
          [
            [RESUME, 'first answer'],
            ['a', 'first value'],
          ],
          'task-1',
        );
        await saver.putWrites(
          cfg,
          [
            [RESUME, 'second answer'],
            ['a', 'second value'],
          ],
          'task-1',
        );
        const t = await saver.getTuple(cfg);
        expect(t?.pendingWrites).toEqual([
          ['task-1', RESUME, 'second answer'],
          ['task-1', 'a', 'first value'],
        ]);
      } finally {
        await saver.store.close();
      }
    });

    it('a message edited in place after it was stored is stored again with its new content (the serialization cache checks id and content)', async () => {
      const saver = await open();
      try {
        const m = new HumanMessage({ id: 'm1', content: 'first' });
        const c1 = checkpoint({ messages: [m] });
        const cfg1 = await saver.put({ configurable: { thread_id: 'edit' } }, c1, meta, { messages: 1 });
        m.content = 'edited';
        const c2 = { ...checkpoint({ messages: [m] }, 2) };
        const cfg2 = await saver.put(cfg1, c2, meta, { messages: 2 });
        const read = async (cfg: typeof cfg1) =>
          ((await saver.getTuple(cfg))?.checkpoint.channel_values.messages as BaseMessage[]).map((x) => x.content);
        expect(await read(cfg1)).toEqual(['first']);
        expect(await read(cfg2)).toEqual(['edited']);
      } finally {
        await saver.store.close();
      }
    });

    it('concurrent putWrites calls for one task each commit their own entry; nothing is lost to the race, and the first stored keeps idx 0', async () => {
      const saver = await open();
      try {
        const cfg = await saver.put({ configurable: { thread_id: 'race' } }, checkpoint({ a: 1 }), meta, { a: 1 });
        await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            saver.putWrites(
              cfg,
              [
                [RESUME, `answer ${i}`],
                ['a', `value ${i}`],
              ],
              'task-1',
            ),
          ),
        );
        const entries = await saver.store.listIdempotent('race');
        expect(entries).toHaveLength(6);
        const gens = entries.map((e) => (e.result as { gen: number }).gen).sort();
        expect(gens).toEqual([0, 1, 2, 3, 4, 5]);
        const byGen = (g: number) =>
          (
            entries.find((e) => (e.result as { gen: number }).gen === g)!.result as {
              writes: { value: { j: string } }[];
            }
          ).writes;
        const t = await saver.getTuple(cfg);
        expect(t?.pendingWrites).toEqual([
          ['task-1', RESUME, byGen(5)[0].value.j],
          ['task-1', 'a', byGen(0)[1].value.j],
        ]);
      } finally {
        await saver.store.close();
      }
    });

    it("pending writes come back in LangGraph's own writesSortKey order (task path, task id, index; code points, not UTF-16 units)", async () => {
      const saver = await open();
      try {
        const cfg = await saver.put({ configurable: { thread_id: 'order' } }, checkpoint({ a: 1 }), meta, { a: 1 });
        const calls: [string, string | undefined][] = [
          ['t-b', '~__pregel_pull, b'],
          ['t-a', '~__pregel_pull, b'],
          ['t-\u{1F600}', '~__pregel_pull, a'],
          ['t-\uFFFF', '~__pregel_pull, a'],
          ['t-input', undefined],
          ['t-z', '~__pregel_pull, a'],
        ];
        for (const [task, path] of calls)
          await saver.putWrites(
            cfg,
            [
              ['a', `${task} 0`],
              ['b', `${task} 1`],
            ],
            task,
            path,
          );
        const expected = calls
          .flatMap(([task, path]) => [0, 1].map((idx) => ({ task, path: path ?? '', idx })))
          .sort((x, y) =>
            compareWritesSortKeys(writesSortKey(x.path, x.task, x.idx), writesSortKey(y.path, y.task, y.idx)),
          )
          .map((w) => `${w.task} ${w.idx}`);
        const t = await saver.getTuple(cfg);
        expect(t?.pendingWrites?.map((w) => w[2])).toEqual(expected);
      } finally {
        await saver.store.close();
      }
    });

    it("getTuple on a long thread reads only the checkpoint's own writes (point lookups), never the whole thread's", async () => {
      const inner = backend.make();
      const calls: string[] = [];
      // the real store, with its calls counted
      const counted = new Proxy(inner, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) => {
            calls.push(String(prop));
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const saver = new WaymarkSaver(counted);
      await saver.setup();
      try {
        const app = loopGraph(saver, 40);
        const config = { configurable: { thread_id: 'many-writes' }, recursionLimit: 1000 };
        await app.invoke({ messages: [new HumanMessage('count to 40')] }, config);
        expect((await inner.listIdempotent('many-writes')).length).toBeGreaterThan(80);
        calls.length = 0;
        const t = await saver.getTuple({ configurable: { thread_id: 'many-writes' } });
        expect(t).toBeDefined();
        expect(calls).not.toContain('listIdempotent');
        expect(calls.filter((c) => c === 'getIdempotent').length).toBeLessThanOrEqual(3);
      } finally {
        await inner.close();
      }
    });

    it('values waymark cannot keep as JSON (bytes, U+0000, deep nesting) round-trip through the serializer bytes', async () => {
      const saver = await open();
      try {
        let deep: unknown = 'bottom';
        for (let i = 0; i < 80; i++) deep = { d: deep };
        const values = { bytes: new Uint8Array([0, 1, 2, 255]), nul: 'a\u0000b', deep };
        const cfg = await saver.put({ configurable: { thread_id: 'odd' } }, checkpoint(values), meta, {
          bytes: 1,
          nul: 1,
          deep: 1,
        });
        const t = await saver.getTuple(cfg);
        expect(t?.checkpoint.channel_values).toEqual(values);
      } finally {
        await saver.store.close();
      }
    });

    it('refuses bad input with INVALID_GRAPH_CONFIG naming every problem, writing nothing', async () => {
      const saver = await open();
      try {
        const noId = { ...checkpoint({ a: 1 }), id: '' };
        const e1 = await saver.put({}, noId, meta, {}).catch((e) => e);
        expect(hasCode(e1, ErrorCode.INVALID_GRAPH_CONFIG)).toBe(true);
        expect(e1.details.problems).toEqual([
          'config.configurable is missing',
          'config.configurable.thread_id is missing',
          'checkpoint.id is missing',
        ]);
        const e2 = await saver.putWrites({ configurable: {} }, [['a', 1]], '').catch((e) => e);
        expect(e2.details.problems).toEqual([
          'config.configurable.thread_id is missing',
          'config.configurable.checkpoint_id is missing',
          'taskId is missing',
        ]);
        const e3 = await saver
          .put({ configurable: { thread_id: 'x'.repeat(300) } }, checkpoint({}), meta, {})
          .catch((e) => e);
        expect(hasCode(e3, ErrorCode.INVALID_GRAPH_CONFIG)).toBe(true);
        expect(await saver.store.listExecutions()).toEqual([]);
      } finally {
        await saver.store.close();
      }
    });

    it('never writes into an execution that holds a waymark run or another thread (a thread id containing "|" cannot shadow a namespace)', async () => {
      const saver = await open();
      try {
        await saver.store.put(step('agent-run', 0));
        const e1 = await saver
          .put({ configurable: { thread_id: 'agent-run' } }, checkpoint({ a: 1 }), meta, { a: 1 })
          .catch((e) => e);
        expect(hasCode(e1, ErrorCode.INVALID_GRAPH_CONFIG)).toBe(true);
        expect(await saver.store.list('agent-run')).toHaveLength(1);
        expect(await saver.getTuple({ configurable: { thread_id: 'agent-run' } })).toBeUndefined();

        await saver.put({ configurable: { thread_id: 'a|b' } }, checkpoint({ a: 1 }), meta, { a: 1 });
        const e2 = await saver
          .put({ configurable: { thread_id: 'a', checkpoint_ns: 'b' } }, checkpoint({ a: 2 }), meta, { a: 1 })
          .catch((e) => e);
        expect(hasCode(e2, ErrorCode.INVALID_GRAPH_CONFIG)).toBe(true);
        expect(await saver.getTuple({ configurable: { thread_id: 'a', checkpoint_ns: 'b' } })).toBeUndefined();
        expect((await saver.getTuple({ configurable: { thread_id: 'a|b' } }))?.checkpoint.channel_values).toEqual({
          a: 1,
        });
      } finally {
        await saver.store.close();
      }
    });

    it('putting the same checkpoint again is accepted when identical and refused when it differs (rows are never rewritten)', async () => {
      const saver = await open();
      try {
        const c = checkpoint({ a: 1 });
        const cfg = await saver.put({ configurable: { thread_id: 'again' } }, c, meta, versionsOf(c));
        await expect(saver.put({ configurable: { thread_id: 'again' } }, c, meta, versionsOf(c))).resolves.toEqual(cfg);
        const changed = { ...c, channel_values: { a: 2 } };
        const e = await saver
          .put({ configurable: { thread_id: 'again' } }, changed, meta, versionsOf(c))
          .catch((x) => x);
        expect(hasCode(e, ErrorCode.INVALID_GRAPH_CONFIG)).toBe(true);
        expect((await saver.getTuple(cfg))?.checkpoint.channel_values).toEqual({ a: 1 });
        expect(await saver.store.list('again')).toHaveLength(1);
      } finally {
        await saver.store.close();
      }
    });
  });
}
