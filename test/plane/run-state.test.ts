/**
 * The plane's API says what its inspector shows a run as: each item of `GET /v1/executions` (and
 * `GET /v1/executions/:id`) has `state`, its status but `stale` for a running run whose hold expired
 * without an end, and `paused` for a LangGraph thread waiting at `interrupt()` (its status says running).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { connectPlane } from '../../client/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step, takeEvents } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

/** The plane's shortest hold: a run whose writer goes quiet is stale soon after. */
const HOLD_MS = 300;

describe("the API listing says each run's state as the inspector shows it", () => {
  const tmp = scratchDir('waymark-run-state-');
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let saver: WaymarkSaver;
  const keys = { ingest: '', read: '' };
  const graph = () =>
    new StateGraph(MessagesAnnotation)
      .addNode('ask', async () => {
        const answer = interrupt({ question: 'Refund order 42?' }) as { approved: boolean };
        return { messages: [new AIMessage(answer.approved ? 'Refunded.' : 'Declined.')] };
      })
      .addEdge(START, 'ask')
      .addEdge('ask', END)
      .compile({ checkpointer: saver });
  const push = async () => {
    const replica = connectPlane(store, { url: plane.url, apiKey: keys.ingest, pollMs: 0, followChanges: false });
    expect(await replica.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    await replica.stop();
  };
  const states = async () => {
    const r = await call(`${plane.url}/v1/executions?limit=50`, { key: keys.read });
    expect(r.status).toBe(200);
    return Object.fromEntries(
      (r.body.items as { executionId: string; status: string; state: string }[]).map((i) => [
        i.executionId,
        `${i.status}/${i.state}`,
      ]),
    );
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite', { takeoverAfterMs: HOLD_MS });
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.read = await plane.key('acme', ['read']);
    store = new SqliteCheckpointer({ path: tmp.file('laptop.db'), writerId: 'laptop' });
    saver = new WaymarkSaver(store);
    await saver.setup();
    await saver.exclusive({ configurable: { thread_id: 'thread-waiting' } }, (config) =>
      graph().invoke({ messages: [new HumanMessage('refund 42')] }, config),
    );
    // a run whose writer sent two rows and went quiet: its hold at the plane runs out
    for (let i = 0; i < 2; i++) await store.put(step('quiet-run', i));
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: { protocol: 1, writerId: store.writerId, rows: await takeEvents(store) },
    });
    expect([r.status, r.body.rejected]).toEqual([200, 0]);
    await push();
  });
  afterAll(async () => {
    await store?.close();
    await plane?.close();
    tmp.cleanup();
  });

  it('a running run whose hold expired is stale; a thread waiting at interrupt() is paused; once answered, running', async () => {
    await new Promise((r) => setTimeout(r, HOLD_MS + 200));
    expect(await states()).toEqual({ 'quiet-run': 'running/stale', 'thread-waiting': 'running/paused' });
    const one = await call(`${plane.url}/v1/executions/quiet-run`, { key: keys.read });
    expect(one.body.execution).toMatchObject({ status: 'running', state: 'stale' });

    // answered: the thread ran to its end, and a LangGraph thread never ends with a marker nor is stale
    await saver.exclusive({ configurable: { thread_id: 'thread-waiting' } }, (config) =>
      graph().invoke(new Command({ resume: { approved: true } }), config),
    );
    await push();
    await new Promise((r) => setTimeout(r, HOLD_MS + 200));
    expect((await states())['thread-waiting']).toBe('running/running');
    const thread = await call(`${plane.url}/v1/executions/thread-waiting`, { key: keys.read });
    expect(thread.body.execution).toMatchObject({ status: 'running', state: 'running' });
  });
});
