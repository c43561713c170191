/**
 * A LangGraph thread that asks for approval (`interrupt()`), then charges:
 * each charge appends one line to <ledger>, which no run can roll back.
 *
 *   start  <db> <thread>: run the thread to its approval
 *   resume <db> <thread> <ledger> <exclusive|plain> <ttlMs> [kill]: say "ready" over IPC, wait for "go",
 *          then answer the approval (inside `saver.exclusive` or not); at the charge say "entered" and wait
 *          for "release"; with `kill`, SIGKILL at the charge instead
 *
 * The last IPC message is { outcome: 'done' | <error code> } (none when killed).
 */
import { appendFileSync } from 'node:fs';
import { Annotation, Command, END, interrupt, START, StateGraph } from '@langchain/langgraph';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';

const [mode, dbPath, thread, ledger, how, ttlArg, kill] = process.argv.slice(2);

async function main(): Promise<void> {
  const saver = new WaymarkSaver(new SqliteCheckpointer({ path: dbPath }));
  await saver.setup();
  const State = Annotation.Root({ approved: Annotation<string>, charged: Annotation<string> });
  const graph = new StateGraph(State)
    .addNode('ask', () => ({ approved: String(interrupt('charge $5?')) }))
    .addNode('charge', async () => {
      if (kill) process.kill(process.pid, 'SIGKILL');
      // the parent says when to charge: once the other resumer is inside too, or was refused
      process.send!('entered');
      await new Promise<void>((r) => process.once('message', (m) => m === 'release' && r()));
      appendFileSync(ledger, `charge ${process.pid}\n`);
      return { charged: 'yes' };
    })
    .addEdge(START, 'ask')
    .addEdge('ask', 'charge')
    .addEdge('charge', END)
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: thread }, durability: 'sync' as const };
  if (mode === 'start') {
    await graph.invoke({}, config);
  } else {
    process.send!('ready');
    await new Promise<void>((r) => process.once('message', (m) => m === 'go' && r()));
    const resume = (held: typeof config) => graph.invoke(new Command({ resume: 'yes' }), held);
    try {
      await (how === 'exclusive'
        ? saver.exclusive({ configurable: { thread_id: thread } }, resume, { ttlMs: Number(ttlArg) })
        : resume(config));
      process.send!({ outcome: 'done' });
    } catch (e) {
      process.send!({ outcome: (e as { code?: string }).code ?? String(e) });
    }
  }
  await saver.store.close();
  process.disconnect?.();
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
