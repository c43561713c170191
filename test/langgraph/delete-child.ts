/**
 * A three-node LangGraph graph (one → two → three) on WaymarkSaver over a
 * SQLite file, thread `<threadId>`, `durability: "sync"`. Node `two` tells the
 * parent (IPC `{at: 'two'}`) and waits for `{go: true}`; every node appends its
 * name to <effects>. The parent deletes the thread meanwhile.
 *
 *   argv: <db> <effects> <threadId>
 *
 * Sends `{done: {ok: true}}` or `{done: {code, message}}` and exits.
 */
import { appendFileSync } from 'node:fs';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';

const [dbPath, effects, threadId] = process.argv.slice(2);
const send = (m: unknown) => new Promise<void>((r) => process.send!(m, () => r()));
const go = new Promise<void>((resolve) => process.on('message', (m: { go?: boolean }) => m.go && resolve()));

const State = Annotation.Root({
  order: Annotation<string>(),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const saver = new WaymarkSaver(new SqliteCheckpointer({ path: dbPath }));
await saver.setup();
const app = new StateGraph(State)
  .addNode('one', () => {
    appendFileSync(effects, 'one\n');
    return { log: ['one'] };
  })
  .addNode('two', async () => {
    await send({ at: 'two' });
    await go;
    appendFileSync(effects, 'two\n');
    return { log: ['two'] };
  })
  .addNode('three', (s) => {
    appendFileSync(effects, `three ${s.order}\n`);
    return { log: [`three for ${s.order}`] };
  })
  .addEdge(START, 'one')
  .addEdge('one', 'two')
  .addEdge('two', 'three')
  .addEdge('three', END)
  .compile({ checkpointer: saver });

let done: unknown;
try {
  await app.invoke({ order: 'A-7' }, { configurable: { thread_id: threadId }, durability: 'sync' });
  done = { ok: true };
} catch (e) {
  done = { code: (e as { code?: string }).code ?? null, message: String((e as Error).message) };
}
await saver.store.close();
await send({ done });
process.disconnect();
