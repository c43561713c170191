/**
 * How a LangGraph thread reads in the inspector's local source, without a
 * browser: a real graph whose node interrupts twice on a SQLite file is paused
 * at each interrupt (the newest one's value shown), running while nothing
 * waits, and its pending writes are not listed as idempotency entries. And the
 * message shapes the conversation reads: LangChain's serialized classes, its
 * stored dicts, plain `{ type | role, content }`, content as parts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { AIMessage, ChatMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { localSource } from '../../client/ui/local-source.js';
import { messageView } from '../../inspector/conversation.js';
import type { Json } from '../../shared/json.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-lg-view-');
const THREAD = 'two-questions';
let store: SqliteCheckpointer;
let saver: WaymarkSaver;

const graph = () =>
  new StateGraph(MessagesAnnotation)
    .addNode('ask', async () => {
      const first = interrupt('Which order?') as string;
      const second = interrupt({ question: `Refund ${first}?` }) as string;
      return { messages: [new AIMessage(`${first}: ${second}`)] };
    })
    .addEdge(START, 'ask')
    .addEdge('ask', END)
    .compile({ checkpointer: saver });

const invoke = (input: unknown) =>
  saver.exclusive({ configurable: { thread_id: THREAD } }, (config) => graph().invoke(input as never, config));

beforeAll(async () => {
  store = new SqliteCheckpointer({ path: tmp.file('view.db') });
  saver = new WaymarkSaver(store);
  await saver.setup();
});
afterAll(async () => {
  await store?.close();
  tmp.cleanup();
});

describe('a LangGraph thread in the local source', () => {
  it('is paused at each interrupt with its newest value, running once answered, and lists no pending write', async () => {
    const source = localSource(store);
    const seen = async () => ({
      status: (await source.getRun(THREAD))?.status,
      listed: (await source.listRuns({ limit: 10, status: 'paused' })).items.map((r) => r.executionId),
      pause: await source.pauseState(THREAD),
    });

    await invoke({ messages: [new HumanMessage('refund please')] });
    let s = await seen();
    expect(s.status).toBe('paused');
    expect(s.listed).toEqual([THREAD]);
    expect(s.pause).toMatchObject({ state: 'open', graph: true, pending: { reason: 'Which order?' } });
    expect(s.pause?.pending.context).toBe('Which order?');

    // answered: the node runs on and interrupts again (a newer interrupt of the same task, after the answer)
    await invoke(new Command({ resume: 'order 42' }));
    s = await seen();
    expect(s.status).toBe('paused');
    expect(s.pause?.pending).toMatchObject({ reason: 'interrupt', context: { question: 'Refund order 42?' } });

    await invoke(new Command({ resume: 'yes' }));
    s = await seen();
    expect(s.status).toBe('running');
    expect(s.listed).toEqual([]);
    expect(s.pause).toBeNull();
    expect((await source.listRuns({ limit: 10, status: 'running' })).items.map((r) => r.executionId)).toEqual([THREAD]);

    // the saver stored its pending writes as entries; none is an effect result to list
    expect((await store.listIdempotent(THREAD)).length).toBeGreaterThan(0);
    expect((await source.listIdempotency(THREAD, { limit: 50 })).items).toEqual([]);
  });

  it('needs no attention for an expired lease: a thread has no end marker, so it is never stale', async () => {
    const source = localSource(store);
    await store.acquireLease(THREAD, { holder: 'gone#1', ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const run = await source.getRun(THREAD);
    expect(run?.status).toBe('running');
    expect(run?.lease).toMatchObject({ holder: 'gone#1', live: false });
    const attention = await source.listRuns({ limit: 10, attention: { pausedBefore: new Date().toISOString() } });
    expect(attention.items.map((r) => r.executionId)).toEqual([]);
  });
});

describe('messages as the conversation reads them', () => {
  const lc = (m: unknown) => JSON.parse(JSON.stringify(m)) as Json;
  const view = (m: Json) => {
    const v = messageView(m);
    return { role: v.role, parts: v.parts, calls: v.toolCalls, name: v.name };
  };

  it("LangChain's serialized classes: the role from the class, the text from kwargs.content (string or parts)", () => {
    expect(view(lc(new HumanMessage('hi')))).toEqual({ role: 'user', parts: [{ text: 'hi' }], calls: [], name: null });
    expect(
      view(
        lc(
          new AIMessage({
            content: [
              { type: 'text', text: 'looking' },
              { type: 'image_url', image_url: 'x' },
            ],
            tool_calls: [{ id: 'c1', name: 'lookup', args: { id: '42' } }],
          }),
        ),
      ),
    ).toEqual({
      role: 'assistant',
      parts: [{ text: 'looking' }, { json: { type: 'image_url', image_url: 'x' } }],
      calls: [{ name: 'lookup', arguments: { id: '42' } }],
      name: null,
    });
    expect(view(lc(new SystemMessage('be brief'))).role).toBe('system');
    expect(view(lc(new ChatMessage({ content: 'note', role: 'critic' }))).role).toBe('critic');
  });

  it('stored dicts and plain messages: { type, data }, { type, content }, { role, content }', () => {
    expect(view({ type: 'human', data: { content: 'hello' } })).toMatchObject({
      role: 'user',
      parts: [{ text: 'hello' }],
    });
    expect(view({ type: 'ai', content: [{ type: 'text', text: 'hi there' }] })).toMatchObject({
      role: 'assistant',
      parts: [{ text: 'hi there' }],
    });
    expect(view({ role: 'tool', name: 'lookup', content: '{"ok":true}' })).toMatchObject({
      role: 'tool',
      name: 'lookup',
    });
    expect(
      view({
        role: 'assistant',
        content: null,
        tool_calls: [{ function: { name: 'send', arguments: '{"to":"bob"}' } }],
      }),
    ).toMatchObject({ role: 'assistant', parts: [], calls: [{ name: 'send', arguments: '{"to":"bob"}' }] });
    // waymark's own
    expect(
      view({ role: 'assistant', content: 'done', toolCalls: [{ id: 't', name: 'x', arguments: {} }] }),
    ).toMatchObject({
      role: 'assistant',
      parts: [{ text: 'done' }],
      calls: [{ name: 'x', arguments: {} }],
    });
    expect(view({ nothing: 1 }).role).toBe('message');
  });
});
