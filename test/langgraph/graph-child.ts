/**
 * A LangGraph agent (a scripted chat model + tools, one tool asks a human
 * with `interrupt()`) on `WaymarkSaver` over a SQLite file, as one machine.
 *
 *   start  <db> <thread> <effects> <planeUrl> <key>: run until the interrupt, push to the plane, exit
 *   resume <db> <thread> <effects> <planeUrl> <key>: restore the thread from the plane into <db>, resume it, push, exit
 *
 * Every tool side effect appends one line to <effects>. The last stdout line is a JSON report.
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { tool } from '@langchain/core/tools';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { connectPlane, restoreFromPlane } from '../../client/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';

const [mode, dbPath, threadId, effects, planeUrl, apiKey] = process.argv.slice(2);

/** Decides from the conversation alone, so a resumed run on another machine gets the same replies. */
class ScriptedChatModel extends BaseChatModel {
  _llmType(): string {
    return 'scripted';
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const toolResults = messages.filter((m) => m.getType() === 'tool').length;
    const message =
      toolResults === 0
        ? new AIMessage({
            content: '',
            tool_calls: [{ id: 'call_weather', name: 'lookup_weather', args: { city: 'Paris' } }],
          })
        : toolResults === 1
          ? new AIMessage({
              content: '',
              tool_calls: [
                { id: 'call_email', name: 'send_email', args: { to: 'bob', body: String(messages.at(-1)!.content) } },
              ],
            })
          : new AIMessage({ content: `Done: ${String(messages.at(-1)!.content)}` });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

const lookupWeather = tool(
  async ({ city }: { city: string }) => {
    appendFileSync(effects, `lookup_weather ${city} ${process.pid}\n`);
    return `sunny in ${city}`;
  },
  { name: 'lookup_weather', description: 'Weather for a city', schema: z.object({ city: z.string() }) },
);

const sendEmail = tool(
  async ({ to, body }: { to: string; body: string }) => {
    const answer = interrupt({ question: `send "${body}" to ${to}?` }) as { approved: boolean };
    if (!answer.approved) return 'not sent';
    appendFileSync(effects, `send_email ${to} ${process.pid}\n`);
    return `sent to ${to}`;
  },
  {
    name: 'send_email',
    description: 'Send an email after a human approves',
    schema: z.object({ to: z.string(), body: z.string() }),
  },
);

const model = new ScriptedChatModel({});
const graph = (saver: WaymarkSaver) =>
  new StateGraph(MessagesAnnotation)
    .addNode('agent', async (s) => ({ messages: [await model.invoke(s.messages)] }))
    .addNode('tools', new ToolNode([lookupWeather, sendEmail]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer: saver });

async function main(): Promise<void> {
  const store = new SqliteCheckpointer({ path: dbPath, writerId: `machine-${mode}` });
  const saver = new WaymarkSaver(store);
  await saver.setup();
  const config = { configurable: { thread_id: threadId } };
  const report: Record<string, unknown> = { pid: process.pid };
  const app = graph(saver);
  if (mode === 'start') {
    await app.invoke({ messages: [new HumanMessage('Email the Paris weather to bob')] }, config);
  } else {
    report.restored = await restoreFromPlane(store, threadId, { url: planeUrl, apiKey });
    const before = await app.getState(config);
    report.interruptsBeforeResume = before.tasks.flatMap((t) => t.interrupts.map((i) => i.value));
    await app.invoke(new Command({ resume: { approved: true } }), config);
  }
  const state = await app.getState(config);
  report.next = state.next;
  report.interrupts = state.tasks.flatMap((t) => t.interrupts.map((i) => i.value));
  report.messages = (state.values.messages as BaseMessage[]).map((m) => `${m.getType()}: ${String(m.content)}`);
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
