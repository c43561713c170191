/**
 * The peer: LangGraph JS (StateGraph over MessagesAnnotation, an agent node and
 * a tools node, `durability: "sync"`), loaded from bench/peers/langgraph so
 * waymark itself never depends on it.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PEER_DIR } from './paths.js';
import { randomText } from './text.js';

const PEER = join(PEER_DIR, 'package.json');

export function peerInstalled(): boolean {
  return existsSync(join(PEER_DIR, 'node_modules', '@langchain', 'langgraph', 'package.json'));
}

export function peerVersion(): string {
  return createRequire(PEER)('@langchain/langgraph/package.json').version;
}

/** Load the peer's graph library and its messages (what a resume process imports before its saver). */
export function peerLoad(): void {
  const req = createRequire(PEER);
  req('@langchain/langgraph');
  req('@langchain/core/messages');
}

/** Load the peer's saver package for a backend (what a resume process imports before it opens the saver). */
export function peerLoadSaver(backend: 'sqlite' | 'postgres'): void {
  createRequire(PEER)(
    backend === 'sqlite' ? '@langchain/langgraph-checkpoint-sqlite' : '@langchain/langgraph-checkpoint-postgres',
  );
}

/**
 * Build the workload graph: T turns, each an AI message of P bytes with one tool
 * call, then a P-byte tool result; the same pseudo-random text as `ourAgent`
 * for the same seed.
 */
export function peerGraph(
  checkpointer: unknown,
  T: number,
  P: number,
  onTurn?: () => void,
  pauseAtLastTool = false,
  seed = 0,
) {
  const req = createRequire(PEER);
  const { StateGraph, MessagesAnnotation, START, END, interrupt } = req('@langchain/langgraph');
  const { AIMessage, ToolMessage } = req('@langchain/core/messages');
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', (state: { messages: { _getType(): string }[] }) => {
      onTurn?.();
      const turn = state.messages.filter((m) => m._getType() === 'ai').length;
      return {
        messages: [
          turn < T
            ? new AIMessage({
                content: randomText(P, seed, turn, 0),
                tool_calls: [{ id: `call_${turn}`, name: 'work', args: { t: turn } }],
              })
            : new AIMessage({ content: 'done' }),
        ],
      };
    })
    .addNode('tools', (state: { messages: { tool_calls?: { id: string }[] }[] }) => {
      const last = state.messages[state.messages.length - 1];
      const call = last.tool_calls![0] as { id: string; args?: { t: number } };
      // The same pause as waymark's resume benchmark: the last tool asks a human.
      const content =
        pauseAtLastTool && call.args?.t === T - 1
          ? String(interrupt({ reason: 'last', i: call.args.t }).approved)
          : randomText(P, seed, call.args!.t, 1);
      return { messages: [new ToolMessage({ content, tool_call_id: call.id })] };
    })
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s: { messages: { tool_calls?: unknown[] }[] }) =>
      s.messages[s.messages.length - 1].tool_calls?.length ? 'tools' : END,
    )
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

export async function peerRun(graph: any, threadId: string, T: number): Promise<void> {
  const req = createRequire(PEER);
  const { HumanMessage } = req('@langchain/core/messages');
  await graph.invoke(
    { messages: [new HumanMessage('go')] },
    { configurable: { thread_id: threadId }, recursionLimit: 2 * T + 10, durability: 'sync' },
  );
}

/** Answer the pause of a graph built with `pauseAtLastTool`; returns the final message count. */
export async function peerResume(graph: any, threadId: string, T: number, answer: unknown): Promise<number> {
  const { Command } = createRequire(PEER)('@langchain/langgraph');
  const out = await graph.invoke(new Command({ resume: answer }), {
    configurable: { thread_id: threadId },
    recursionLimit: 2 * T + 10,
    durability: 'sync',
  });
  return out.messages.length;
}

/** The peer's analogue of reading a run's latest row: the thread's latest checkpoint tuple. */
export async function peerLatest(saver: any, threadId: string): Promise<unknown> {
  return saver.getTuple({ configurable: { thread_id: threadId } });
}

/**
 * The peer's SQLite saver. Left alone it opens WAL with better-sqlite3's
 * compiled-in WAL default, synchronous=NORMAL: no fsync per commit (counted
 * with strace: 11 fsyncs for 200 steps). `synchronous: 'FULL'` sets what
 * waymark uses by default, for a comparison at equal durability.
 */
export function peerSqliteSaver(path: string, synchronous?: 'FULL'): any {
  const { SqliteSaver } = createRequire(PEER)('@langchain/langgraph-checkpoint-sqlite');
  const saver = SqliteSaver.fromConnString(path);
  if (synchronous) saver.db.pragma(`synchronous = ${synchronous}`);
  return saver;
}

export async function peerPostgresSaver(url: string, schema: string): Promise<any> {
  const { PostgresSaver } = createRequire(PEER)('@langchain/langgraph-checkpoint-postgres');
  const saver = PostgresSaver.fromConnString(url, { schema });
  await saver.setup();
  return saver;
}
