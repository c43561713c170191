/**
 * A LangGraph agent loop (model step, tool step, T times) on WaymarkSaver over
 * a SQLite file. Every model call and tool call appends one line to <effects>.
 *
 *   run    <db> <effects> <T> <killAtHit>: SIGKILL right after the <killAtHit>-th putWrites commit
 *   resume <db> <effects> <T>: continue the thread from its newest checkpoint
 *
 * The last stdout line is a JSON report (only when the process lives).
 */
import { appendFileSync } from 'node:fs';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { noFaults } from '../../client/index.js';
import { killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';

const [mode, dbPath, effects, turnsArg, killArg] = process.argv.slice(2);
const T = Number(turnsArg);
const effect = (what: string) => appendFileSync(effects, `${what} ${process.pid}\n`);

async function main(): Promise<void> {
  const faults = mode === 'run' ? killAt('store.idempotency.afterCommit', { hits: Number(killArg) }) : noFaults;
  const saver = new WaymarkSaver(new SqliteCheckpointer({ path: dbPath, faults }));
  await saver.setup();
  const app = new StateGraph(MessagesAnnotation)
    .addNode('agent', (s) => {
      const done = s.messages.filter((m) => m.getType() === 'tool').length;
      effect(`model ${done}`);
      return {
        messages: [
          done < T
            ? new AIMessage({ content: '', tool_calls: [{ id: `call_${done}`, name: 'work', args: { n: done } }] })
            : new AIMessage('finished'),
        ],
      };
    })
    .addNode('tools', (s) => {
      const call = (s.messages.at(-1) as AIMessage).tool_calls![0];
      effect(`tool ${call.args.n}`);
      return { messages: [new ToolMessage({ tool_call_id: call.id!, content: `did ${call.args.n}` })] };
    })
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: 'crashy' }, recursionLimit: 100, durability: 'sync' as const };
  const out = await app.invoke(mode === 'run' ? { messages: [new HumanMessage('go')] } : null, config);
  await saver.store.close();
  process.stdout.write(
    `${JSON.stringify({ pid: process.pid, messages: out.messages.map((m: { getType(): string; content: unknown }) => `${m.getType()}: ${String(m.content)}`) })}\n`,
  );
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
