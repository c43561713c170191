/**
 * Token usage: recorded with the row written after each model call (nested
 * workers and pauses included), summed per run, shown by `waymark inspect`,
 * replicated to the plane and shown on its run page. Run events around a pause.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ScriptedModel,
  connectPlane,
  interrupt,
  sumUsage,
  tool,
  usageOf,
  type Model,
  type ModelReply,
  type ModelRequest,
  type RunEvent,
  type ScriptRule,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { inspectRun } from '../../client/cli/store-commands.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

/** A scripted model that reports usage: input = 10 × (messages), output = 3, cached = 2. */
class Metered implements Model {
  readonly name: string;
  private readonly inner: ScriptedModel;
  constructor(name: string, rule: ScriptRule) {
    this.name = name;
    this.inner = new ScriptedModel(rule);
  }
  async generate(req: ModelRequest): Promise<ModelReply> {
    const r = await this.inner.generate(req);
    return {
      ...r,
      finishReason: r.toolCalls.length ? 'tool-calls' : 'stop',
      usage: { model: this.name, inputTokens: 10 * req.messages.length, outputTokens: 3, cachedInputTokens: 2 },
    };
  }
}

describe('token usage per model call, per run, in inspect and on the plane', () => {
  const tmp = scratchDir('waymark-usage-');
  let plane: TestPlane;
  beforeAll(async () => {
    plane = await startTestPlane('pglite');
  });
  afterAll(async () => {
    await plane.close();
    tmp.cleanup();
  });

  it('a supervisor and its worker: each call is recorded once on the next row of the run, whichever level writes it', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const worker = new Agent({
      name: 'researcher',
      model: new Metered('worker-m', (c) =>
        c.turn === 0 ? { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] } : { content: 'found it' },
      ),
      tools: [
        tool({
          name: 'lookup',
          description: 'look up',
          parameters: z.object({ q: z.string() }),
          execute: () => 'data',
        }),
      ],
    });
    const sup = new Agent({
      name: 'boss',
      kind: 'supervisor',
      model: new Metered('boss-m', (c) =>
        c.turn === 0 ? { toolCalls: [{ name: 'researcher', arguments: { task: 't' } }] } : { content: 'done' },
      ),
      tools: [worker.asTool()],
      checkpointer: store,
    });
    const r = await sup.run('go');
    expect(r).toMatchObject({ status: 'completed', output: 'done' });
    const rows = await store.list(r.executionId);
    const recorded = rows.flatMap((row) =>
      usageOf(row.nodeOutput).map((u) => `${row.seq}:${row.step}:${u.agentPath}:t${u.turn}:${u.model}`),
    );
    expect(recorded).toEqual([
      '1:tool_call:supervisor:boss:t0:boss-m',
      '3:tool_call:supervisor:boss/agent:researcher:t0:worker-m',
      // the worker's last call is taken by the supervisor's next row
      '5:llm_call:supervisor:boss/agent:researcher:t1:worker-m',
      '6:run_end:supervisor:boss:t1:boss-m',
    ]);
    expect(rows.map((x) => x.step)).toEqual([
      'llm_call',
      'tool_call',
      'llm_call',
      'tool_call',
      'llm_call',
      'llm_call',
      'run_end',
    ]);
    expect(rows[6].nodeOutput).toMatchObject({ output: 'done' });
    expect(sumUsage(rows)).toMatchObject({
      calls: 4,
      outputTokens: 12,
      cachedInputTokens: 8,
      models: { 'boss-m': 2, 'worker-m': 2 },
    });
    await store.close();
  });

  it('a pause takes the usage of the call before it; events show the pause and the end; resume counts its own calls', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const approve = tool({
      name: 'approve',
      description: 'needs a human',
      parameters: z.object({}),
      execute: () => (interrupt('ok?', {}).approved ? 'yes' : 'no'),
    });
    const agent = new Agent({
      name: 'p',
      model: new Metered('m', (c) =>
        c.turn === 0
          ? { toolCalls: [{ name: 'approve', arguments: {} }] }
          : { content: `answer ${c.toolResults[0]?.content}` },
      ),
      tools: [approve],
      checkpointer: store,
    });
    const events: RunEvent[] = [];
    const paused = await agent.run('go', { onEvent: (e) => events.push(e) });
    expect(paused.status).toBe('paused');
    expect(events.map((e) => e.type)).toEqual(['step-start', 'tool-call', 'pause', 'end']);
    expect(events[2]).toMatchObject({ type: 'pause', pendingInterrupt: { reason: 'ok?' } });
    const done = await agent.resume(paused.executionId, { approved: true }, { onEvent: (e) => events.push(e) });
    expect(done).toMatchObject({ status: 'completed', output: 'answer yes' });
    // the resumed tool runs again from the claim's row: its call is shown with that row
    expect(events.slice(4).map((e) => e.type)).toEqual(['tool-call', 'tool-result', 'step-start', 'end']);
    const rows = await store.list(paused.executionId);
    expect(events[4]).toMatchObject({ checkpointId: rows[3].id });
    expect(rows.map((x) => `${x.step}:${usageOf(x.nodeOutput).length}`)).toEqual([
      'llm_call:0',
      'tool_call:1',
      'hitl_pause:0',
      'tool_call:0',
      'llm_call:0',
      'run_end:1',
    ]);
    await store.close();
  });

  it('inspect prints the run total (text and --json); the plane run page and run list show it after replication', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('u.db') });
    const ingest = await plane.key('usage', ['ingest']);
    const read = await plane.key('usage', ['read']);
    const replica = connectPlane(store, { url: plane.url, apiKey: ingest, pollMs: 0 });
    const agent = new Agent({
      name: 'u',
      model: new Metered('meter-1', (c) =>
        c.turn < 2 ? { toolCalls: [{ name: 'noop', arguments: {} }] } : { content: 'fin' },
      ),
      tools: [tool({ name: 'noop', description: 'nothing', parameters: z.object({}), execute: () => 'ok' })],
      checkpointer: store,
    });
    const r = await agent.run('hi', { executionId: 'usage-run' });
    expect(r.status).toBe('completed');
    // three calls over 1, 3 and 5 messages
    const lines: string[] = [];
    await inspectRun(store, 'usage-run', (l) => lines.push(l));
    expect(lines).toContain('usage: 3 model calls, 90 input tokens (6 cached), 9 output tokens (meter-1 ×3)');
    const json: string[] = [];
    await inspectRun(store, 'usage-run', (l) => json.push(l), { json: true });
    expect(JSON.parse(json.join('\n')).usage).toEqual({
      calls: 3,
      inputTokens: 90,
      outputTokens: 9,
      cachedInputTokens: 6,
      models: { 'meter-1': 3 },
      byModel: { 'meter-1': { calls: 3, inputTokens: 90, outputTokens: 9, cachedInputTokens: 6 } },
    });

    await replica.flush({ timeoutMs: 30_000 });
    await replica.stop();
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      body: new URLSearchParams({ key: read }),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0];
    const page = await fetch(`${plane.url}/runs/usage-run`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-testid="usage"');
    expect(html.replace(/<!--.*?-->/g, '').replace(/\s+/g, ' ')).toMatch(
      /Tokens: 90 in \(6 cached\) · 9 out · 3 model calls \( ?meter-1 ×3\)/,
    );
    const list = await fetch(`${plane.url}/?q=usage-run`, { headers: { cookie } });
    const listHtml = (await list.text()).replace(/<!--.*?-->/g, '');
    expect(listHtml).toMatch(/data-testid="tokens"[^>]*>\s*90 in \/ 9 out\s*</);
    await store.close();
  });
});
