/**
 * A LangGraph graph whose subgraph pauses with `interrupt()`, on WaymarkSaver
 * over a SQLite file, as one machine.
 *
 *   start  <db> <thread> <effects> <planeUrl> <key>: run until the subgraph's interrupt, push to the plane, exit
 *   resume <db> <thread> <effects> <planeUrl> <key>: restoreThread from the plane into <db>, resume, push, exit
 *
 * Every node's side effect appends one line to <effects>. The last stdout line is a JSON report.
 */
import { appendFileSync } from 'node:fs';
import { Annotation, Command, END, START, StateGraph, interrupt } from '@langchain/langgraph';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { connectPlane } from '../../client/index.js';
import { WaymarkSaver, restoreThread } from '../../client/langgraph/index.js';

const [mode, dbPath, threadId, effects, planeUrl, apiKey] = process.argv.slice(2);
const effect = (what: string) => appendFileSync(effects, `${what} ${process.pid}\n`);

// a set of steps: the subgraph hands back its whole state, which includes the parent's entries
const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b.filter((x) => !a.includes(x))], default: () => [] }),
});

const approval = new StateGraph(State)
  .addNode('draft', () => {
    effect('draft');
    return { log: ['drafted'] };
  })
  .addNode('send', () => {
    const answer = interrupt({ question: 'send the draft?' }) as { approved: boolean };
    if (answer.approved) effect('send');
    return { log: [answer.approved ? 'sent' : 'held'] };
  })
  .addEdge(START, 'draft')
  .addEdge('draft', 'send')
  .addEdge('send', END)
  .compile();

const app = (saver: WaymarkSaver) =>
  new StateGraph(State)
    .addNode('prepare', () => {
      effect('prepare');
      return { log: ['prepared'] };
    })
    .addNode('approval', approval)
    .addEdge(START, 'prepare')
    .addEdge('prepare', 'approval')
    .addEdge('approval', END)
    .compile({ checkpointer: saver });

async function main(): Promise<void> {
  const store = new SqliteCheckpointer({ path: dbPath, writerId: `machine-${mode}` });
  const saver = new WaymarkSaver(store);
  await saver.setup();
  const config = { configurable: { thread_id: threadId } };
  const report: Record<string, unknown> = { pid: process.pid };
  const graph = app(saver);
  if (mode === 'start') {
    await graph.invoke({ log: [] }, config);
  } else {
    report.restored = (await restoreThread(store, threadId, { url: planeUrl, apiKey })).executions.map((e) => ({
      executionId: e.executionId,
      inserted: e.inserted,
    }));
    await graph.invoke(new Command({ resume: { approved: true } }), config);
  }
  const state = await graph.getState(config, { subgraphs: true });
  report.next = state.next;
  report.interrupts = state.tasks.flatMap((t) => t.interrupts.map((i) => i.value));
  report.log = state.values.log;
  report.executions = (await store.listExecutions()).map((e) => e.executionId);
  const replica = connectPlane(store, { url: planeUrl, apiKey, pollMs: 0, debounceMs: 20, timeoutMs: 20_000 });
  report.flush = await replica.flush({ timeoutMs: 60_000 });
  await replica.stop();
  await store.close();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
