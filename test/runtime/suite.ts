/**
 * The runtime's behaviour, run on every store backend. Crash cases with real
 * killed processes are in crash.test.ts.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  AlreadyResumed,
  idempotent,
  interrupt,
  InvalidResume,
  PauseNotFound,
  Resume,
  recoverRuns,
  ScriptedModel,
  tool,
  type Checkpointer,
  type FaultHook,
  type Model,
  type ModelReply,
  type ModelRequest,
  type ModelStreamPart,
  type RunEvent,
  sumUsage,
  usageOf,
} from '../../client/index.js';
import { stableStringify, type Json } from '../../shared/json.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { scratchDir } from '../helpers/tmp.js';

export interface RuntimeSuiteOptions {
  name: string;
  /** A fresh store; `faults` is passed to the store's constructor (named fault points). */
  make(options?: { faults?: FaultHook }): Promise<{ store: Checkpointer; close(): Promise<void> }>;
}

const rowsOf = async (store: Checkpointer, id: string) =>
  (await store.list(id)).map((r) => `${r.nodeId} ${r.step} ${r.status}`);

export function runRuntimeSuite(options: RuntimeSuiteOptions): void {
  describe(`runtime: ${options.name}`, () => {
    const tmp = scratchDir('waymark-runtime-');
    let store: Checkpointer;
    let close: () => Promise<void>;
    let ledger: Ledger;
    let n = 0;
    beforeEach(async () => {
      ({ store, close } = await options.make());
      await store.setup();
      ledger = new Ledger(tmp.file(`ledger-${++n}.jsonl`));
    });
    afterEach(async () => close());
    afterAll(() => tmp.cleanup());

    it('usage defect: token usage was never read; now each call is on the next row, summed per run, and a streamed run writes the same rows', async () => {
      /** A streaming model: the refund, then the answer in two pieces; usage 100+turn in, 7 out, 5 cached. */
      class Streaming implements Model {
        readonly name = 'streamer';
        calls = 0;
        private reply(req: ModelRequest): ModelReply {
          const turn = req.messages.filter((m) => m.role === 'assistant').length;
          this.calls++;
          const usage = { model: 'streamer-v1', inputTokens: 100 + turn, outputTokens: 7, cachedInputTokens: 5 };
          return turn === 0
            ? {
                content: null,
                toolCalls: [{ id: 'c0', name: 'refund', arguments: { order: '1042', amount: 20 } }],
                usage,
                finishReason: 'tool-calls',
              }
            : { content: 'Refunded.', toolCalls: [], usage, finishReason: 'stop' };
        }
        async generate(req: ModelRequest): Promise<ModelReply> {
          return this.reply(req);
        }
        async stream(req: ModelRequest, onPart: (p: ModelStreamPart) => void): Promise<ModelReply> {
          const r = this.reply(req);
          if (r.content) for (const piece of ['Refun', 'ded.']) onPart({ type: 'text-delta', delta: piece });
          return r;
        }
      }
      const shapes: string[][] = [];
      for (const streamed of [false, true]) {
        const events: RunEvent[] = [];
        const { agent } = refundAgent({ store, ledger, model: new Streaming() as unknown as ScriptedModel });
        const r = await agent.run('refund', {
          executionId: `usage-${n}-${streamed}`,
          ...(streamed ? { onEvent: (e: RunEvent) => events.push(e) } : {}),
        });
        expect(r).toMatchObject({ status: 'completed', output: 'Refunded.' });
        const rows = await store.list(r.executionId);
        shapes.push(
          rows.map(
            (x) =>
              `${x.nodeId} ${x.step} ${usageOf(x.nodeOutput)
                .map((u) => u.inputTokens)
                .join(',')}`,
          ),
        );
        expect(sumUsage(rows)).toEqual({
          calls: 2,
          inputTokens: 201,
          outputTokens: 14,
          cachedInputTokens: 10,
          models: { 'streamer-v1': 2 },
          byModel: { 'streamer-v1': { calls: 2, inputTokens: 201, outputTokens: 14, cachedInputTokens: 10 } },
        });
        expect(rows.at(-1)!.nodeOutput).toMatchObject({ output: 'Refunded.' });
        if (streamed)
          expect(events.filter((e) => e.type === 'text-delta').map((e) => (e as { delta: string }).delta)).toEqual([
            'Refun',
            'ded.',
          ]);
      }
      expect(shapes[0]).toEqual([
        'turn:0 llm_call ',
        'turn:0/tool:refund tool_call 100',
        'turn:1 llm_call ',
        'run_end run_end 101',
      ]);
      expect(shapes[1]).toEqual(shapes[0]);
    });

    it('a completed run writes turn, tool, turn and a completed marker', async () => {
      const { agent } = refundAgent({ store, ledger });
      const r = await agent.run(refundRequest('1042', 20), { executionId: `small-${n}` });
      expect(r).toMatchObject({ status: 'completed', output: 'Refund for order 1042 is on its way.' });
      expect(await rowsOf(store, r.executionId)).toEqual([
        'turn:0 llm_call completed',
        'turn:0/tool:refund tool_call completed',
        'turn:1 llm_call completed',
        'run_end run_end completed',
      ]);
      const tr = (await store.list(r.executionId))[1];
      expect(tr.agentPath).toBe('agent:refund-bot/tool:refund');
      expect(tr.nodeInput).toEqual({ order: '1042', amount: 20 });
      expect(ledger.charges().length).toBe(1);
    });

    it("a declined refund charges nothing and the example model's reply says it was declined, not that it is on its way", async () => {
      const { agent } = refundAgent({ store, ledger });
      const id = `declined-${n}`;
      await agent.run(refundRequest('1042', 50000), { executionId: id });
      const r = await agent.resume(id, { approved: false });
      expect(r).toMatchObject({ status: 'completed', output: 'Refund for order 1042 was declined.' });
      expect(ledger.charges()).toEqual([]);
    });

    it('a paused run writes the interrupted row and the pending row, and no marker', async () => {
      const { agent } = refundAgent({ store, ledger });
      const r = await agent.run(refundRequest('1042', 50000), { executionId: `large-${n}` });
      expect(r.status).toBe('paused');
      expect(r.pendingInterrupt).toMatchObject({
        reason: 'manager_approval',
        nodeId: 'turn:0/tool:refund',
        agentPath: 'agent:refund-bot/tool:refund',
        context: { order: '1042', amount: 50000, balance: 100 },
      });
      expect(await rowsOf(store, r.executionId)).toEqual([
        'turn:0 llm_call completed',
        'turn:0/tool:refund tool_call completed',
        'turn:0/tool:refund hitl_pause interrupted',
      ]);
      expect(await store.getPendingInterrupt(r.executionId)).toEqual(r.pendingInterrupt);
      expect(ledger.charges()).toEqual([]);
    });

    it('resume claims the pause, re-runs the tool with the answer and finishes; a second resume is refused', async () => {
      const { agent, model } = refundAgent({ store, ledger });
      const id = `resume-${n}`;
      await agent.run(refundRequest('1042', 50000), { executionId: id });
      const r = await agent.resume(id, new Resume({ approved: true, metadata: { approver: 'alice' } }));
      expect(r).toMatchObject({ status: 'completed', output: 'Refund for order 1042 is on its way.' });
      expect(model.calls).toBe(2);
      expect(ledger.charges()).toEqual([expect.objectContaining({ order: '1042', amount: 50000 })]);
      await expect(agent.resume(id, { approved: true })).rejects.toBeInstanceOf(AlreadyResumed);
      await expect(agent.resume(id)).rejects.toMatchObject({ code: 'ALREADY_FINISHED' });
      expect(await store.getPendingInterrupt(id)).toBeNull();
    });

    it('a paused run needs a Resume; an answer to a run that is not paused is refused', async () => {
      const { agent } = refundAgent({ store, ledger });
      const id = `need-${n}`;
      await agent.run(refundRequest('1', 5000), { executionId: id });
      await expect(agent.resume(id)).rejects.toMatchObject({ code: 'RESUME_REQUIRED' });
      expect(await store.getPendingInterrupt(id)).not.toBeNull();
      expect(() => new Resume({ approved: true, data: 1 } as never)).toThrow(/invalid Resume/);
      // a bad answer names every problem (and their paths), with a stable code; the pause stays open
      const bad = (await agent
        .resume(id, { approved: 'yes', metadata: { a: 1n }, data: 1, extra: 2 } as never)
        .catch((e) => e)) as InvalidResume;
      expect(bad).toBeInstanceOf(InvalidResume);
      expect(bad.code).toBe('INVALID_RESUME');
      expect(bad.problems).toEqual(
        expect.arrayContaining([
          "unknown field 'data'",
          "unknown field 'extra'",
          expect.stringMatching(/^approved: /),
          expect.stringMatching(/^metadata\.a: /),
        ]),
      );
      expect(bad.message).not.toMatch(/: : /);
      expect(await store.getPendingInterrupt(id)).not.toBeNull();
      await expect(agent.resume(`${id}-never-ran`)).rejects.toMatchObject({
        code: 'EXECUTION_NOT_FOUND',
        message: expect.stringContaining('no rows in this store'),
      });
      // on a store connected to a plane the error says how to bring a run this store never saw
      expect((await agent.resume(`${id}-never-ran`).catch((e: Error) => e.message)) as string).not.toContain(
        'restoreFromPlane',
      );
      const unguard = store.planeGuard.install({ claim: async () => {}, takeover: async () => {} });
      try {
        await expect(agent.resume(`${id}-never-ran`)).rejects.toThrow(/restoreFromPlane/);
      } finally {
        unguard();
      }
      const done = await agent.run(refundRequest('2', 5), { executionId: `${id}-b` });
      await expect(agent.resume(done.executionId, { approved: true })).rejects.toMatchObject({
        code: 'ALREADY_FINISHED',
      });
    });

    it('an answer to a run with no open pause is refused with what is true of the run, one code each', async () => {
      const refuse = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: { code?: string; message: string; details?: unknown }) => e,
        );
      // failed, never paused: PAUSE_NOT_FOUND, naming the failure and how to go on (no answer)
      const looping = new Agent({
        name: 'looper',
        model: new ScriptedModel(({ turn }) => ({ toolCalls: [{ name: 'noop', arguments: { turn } }] })),
        tools: [
          tool({ name: 'noop', description: '', parameters: z.object({ turn: z.number() }), execute: () => 'ok' }),
        ],
        checkpointer: store,
        maxTurns: 2,
      });
      const failed = `refusal-failed-${n}`;
      expect(await looping.run('go', { executionId: failed })).toMatchObject({
        status: 'failed',
        error: { code: 'MAX_TURNS' },
      });
      const f = await refuse(looping.resume(failed, { approved: true }));
      expect(f).toMatchObject({
        code: 'PAUSE_NOT_FOUND',
        details: { executionId: failed, status: 'failed', error: { code: 'MAX_TURNS' } },
      });
      expect(f).toBeInstanceOf(PauseNotFound);
      expect(f!.message).toMatch(
        /never paused.*failed \(MAX_TURNS: agent 'looper' reached its limit of 2 turns\).*without an answer/,
      );

      // completed, never paused: ALREADY_FINISHED, with or without an answer
      const { agent } = refundAgent({ store, ledger });
      const completed = (await agent.run(refundRequest('3', 5), { executionId: `refusal-done-${n}` })).executionId;
      const c = await refuse(agent.resume(completed, { approved: true }));
      expect(c).toMatchObject({ code: 'ALREADY_FINISHED', details: { executionId: completed } });
      expect(c!.message).toMatch(/completed without pausing/);
      await expect(agent.resume(completed)).rejects.toMatchObject({
        code: 'ALREADY_FINISHED',
        message: expect.stringMatching(/already finished \(completed\)/),
      });

      // running (no marker), never paused: PAUSE_NOT_FOUND, status running
      const running = `refusal-running-${n}`;
      await store.put({
        executionId: running,
        nodeId: 'turn:0',
        turn: 0,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:refund-bot',
        state: { messages: [{ role: 'user', content: 'hi' }], turn: 0 },
      });
      const r = await refuse(agent.resume(running, { approved: true }));
      expect(r).toMatchObject({ code: 'PAUSE_NOT_FOUND', details: { executionId: running, status: 'running' } });
      expect(r).toBeInstanceOf(PauseNotFound);
      expect(r!.message).toMatch(/never paused.*without an answer to take it up/);

      // paused, answered, completed: its pause was resumed already (ALREADY_RESUMED), and the run completed
      const answered = (await agent.run(refundRequest('1042', 50000), { executionId: `refusal-answered-${n}` }))
        .executionId;
      const pauseId = (await store.getPendingInterrupt(answered))!.checkpointId;
      expect((await agent.resume(answered, { approved: true })).status).toBe('completed');
      const a = await refuse(agent.resume(answered, { approved: true }));
      expect(a).toMatchObject({
        code: 'ALREADY_RESUMED',
        details: { executionId: answered, status: 'completed', lastPauseId: pauseId },
      });
      expect(a!.message).toMatch(new RegExp(`pause at checkpoint ${pauseId} was answered already; the run completed`));

      // cancelled: RUN_CANCELLED, answer or not
      const cancelled = (await agent.run(refundRequest('1043', 50000), { executionId: `refusal-cancelled-${n}` }))
        .executionId;
      await store.cancel(cancelled, { reason: 'customer withdrew' });
      await expect(agent.resume(cancelled, { approved: true })).rejects.toMatchObject({ code: 'RUN_CANCELLED' });
      await expect(agent.resume(cancelled)).rejects.toMatchObject({ code: 'RUN_CANCELLED' });
      // nothing was claimed or written by a refusal
      expect(ledger.charges().map((x) => x.order)).toEqual(['3', '1042']);
    });

    it('five concurrent resumers: exactly one runs the tool, four get AlreadyResumed', async () => {
      const id = `five-${n}`;
      await refundAgent({ store, ledger }).agent.run(refundRequest('1042', 50000), { executionId: id });
      const outcomes = await Promise.allSettled(
        Array.from({ length: 5 }, () => refundAgent({ store, ledger }).agent.resume(id, { approved: true })),
      );
      const ok = outcomes.filter((o) => o.status === 'fulfilled');
      const refused = outcomes.filter(
        (o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'ALREADY_RESUMED',
      );
      expect(ok.length).toBe(1);
      expect(refused.length).toBe(4);
      expect(ledger.charges().length).toBe(1);
    });

    it('the approver context is frozen at the pause', async () => {
      const world = { balance: 100 };
      const t = tool({
        name: 'refund',
        description: '',
        parameters: z.object({}),
        execute: () => {
          const ctx = { balance: world.balance, items: [1, 2] };
          const d = interrupt('approval', ctx);
          return d.approved;
        },
      });
      const model = new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'refund', arguments: {} }] } : { content: 'ok' },
      );
      const agent = new Agent({ name: 'a', model, tools: [t], checkpointer: store });
      const id = `frozen-${n}`;
      await agent.run('go', { executionId: id });
      world.balance = 0;
      const paused = (await store.list(id)).at(-1)!;
      expect(paused.interruptContext).toEqual({ balance: 100, items: [1, 2] });
      expect((await store.getPendingInterrupt(id))?.context).toEqual({ balance: 100, items: [1, 2] });
      await agent.resume(id, { approved: true });
    });

    it('each interrupt() in one tool invocation is its own pause, answered in order', async () => {
      const { agent } = refundAgent({ store, ledger, twoApprovals: true });
      const id = `two-${n}`;
      const first = await agent.run(refundRequest('7', 9000), { executionId: id });
      expect(first.pendingInterrupt?.reason).toBe('manager_approval');
      const second = await agent.resume(id, { approved: true, metadata: { approver: 'alice' } });
      expect(second.status).toBe('paused');
      expect(second.pendingInterrupt).toMatchObject({
        reason: 'finance_approval',
        context: { firstApprover: 'alice' },
      });
      expect(ledger.charges()).toEqual([]);
      const done = await agent.resume(id, { approved: true, metadata: { approver: 'bob' } });
      expect(done.status).toBe('completed');
      expect(ledger.charges().length).toBe(1);
    });

    it('a sibling tool call that never ran is answered "not run" and never fired', async () => {
      const { agent, model } = refundAgent({ store, ledger, withNotify: true });
      const id = `sib-${n}`;
      const p = await agent.run(refundRequest('1042', 50000), { executionId: id });
      expect(p.status).toBe('paused');
      let seen: string[] = [];
      const spy = model.generate.bind(model);
      model.generate = async (req) => {
        seen = req.messages.filter((m) => m.role === 'tool').map((m) => (m as { content: string }).content);
        return spy(req);
      };
      const r = await agent.resume(id, { approved: true });
      expect(r.status).toBe('completed');
      expect(ledger.entries().filter((e) => e.kind === 'notify')).toEqual([]);
      expect(seen[0]).toContain('"approved":true');
      expect(seen[1]).toMatch(/not run on resume/);
    });

    it('a tool error is a tool result, not a failed run; invalid arguments too', async () => {
      const boom = tool({
        name: 'boom',
        description: '',
        parameters: z.object({ n: z.number() }),
        execute: () => {
          throw new Error('kaput');
        },
      });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn === 0
          ? {
              toolCalls: [
                { name: 'boom', arguments: { n: 1 } },
                { name: 'boom', arguments: { n: 'x' } },
                { name: 'ghost', arguments: {} as Record<string, number> },
              ],
            }
          : { content: toolResults.map((t) => t.content).join(' | ') },
      );
      const agent = new Agent({ name: 'a', model, tools: [boom], checkpointer: store });
      const r = await agent.run('go');
      expect(r.status).toBe('completed');
      expect(r.output).toMatch(
        /Tool 'boom' failed: kaput \| Tool 'boom' got invalid arguments: n: .* \| Tool 'ghost' does not exist/,
      );
    });

    it('plain side effects fire again on resume; idempotent ones once, per run, and null is a hit', async () => {
      const plain = refundAgent({ store, ledger, idempotentCharge: false }).agent;
      await plain.run(refundRequest('1042', 5000), { executionId: `plain-${n}` });
      // the charge happens before the pause in this variant: charge first, then ask
      let fired = 0;
      let nullFired = 0;
      const chargeCard = idempotent(async function chargeCard(order: string) {
        fired++;
        return { order };
      });
      const lookup = idempotent(async function lookup() {
        nullFired++;
        return null;
      });
      const t = tool({
        name: 'refund',
        description: '',
        parameters: z.object({ order: z.string() }),
        execute: async ({ order }) => {
          await chargeCard(order);
          await lookup();
          const d = interrupt('approval', { order });
          return d.approved;
        },
      });
      const model = new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'refund', arguments: { order: '1042' } }] } : { content: 'done' },
      );
      const agent = new Agent({ name: 'a', model, tools: [t], checkpointer: store });
      const id = `idem-${n}`;
      await agent.run('go', { executionId: id });
      await agent.resume(id, { approved: true });
      expect(fired).toBe(1);
      expect(nullFired).toBe(1);
      expect((await store.listIdempotent(id)).map((e) => e.result)).toContainEqual(null);
      await agent.run('go', { executionId: `${id}-new` });
      expect(fired).toBe(2);
      await chargeCard('outside');
      await chargeCard('outside');
      expect(fired).toBe(4);
    });

    /** One tool `act` that calls `body` then pauses `pauses` times; the model retries a failed tool up to 3 times. */
    const pausingAgent = (name: string, body: (args: { text: string }) => Promise<unknown>, pauses = 1) => {
      const t = tool({
        name: 'act',
        description: '',
        parameters: z.object({ text: z.string() }),
        execute: async (args) => {
          const out = await body(args);
          for (let i = 0; i < pauses; i++) interrupt(`confirm-${i}`, null);
          return out;
        },
      });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn < 3 && (turn === 0 || /failed/.test(toolResults[0]?.content ?? ''))
          ? { toolCalls: [{ name: 'act', arguments: { text: 'x'.repeat(600) } }] }
          : { content: toolResults.map((r) => r.content).join('\n') },
      );
      return { agent: new Agent({ name, model, tools: [t], checkpointer: store }), model };
    };

    it('idempotent records a result that is not plain JSON in its JSON form once fn ran, and never invites a repeat', async () => {
      class Receipt {
        constructor(readonly url: string) {}
        toJSON() {
          return { receipt: this.url };
        }
      }
      let charged = 0;
      const seen: unknown[] = [];
      const charge = idempotent(async function charge(_text: string) {
        charged++;
        return {
          chargeId: 'ch_1',
          receiptUrl: undefined,
          at: new Date(0),
          sdk: new Receipt('r/1'),
          tags: new Map([[1, 2]]),
          n: NaN,
        };
      });
      const { agent, model } = pausingAgent('rec', async ({ text }) => {
        const r = await charge(text);
        seen.push(r);
        return r;
      });
      const id = `json-form-${n}`;
      expect((await agent.run('go', { executionId: id })).status).toBe('paused');
      const r = await agent.resume(id, { approved: true });
      expect(r.status).toBe('completed');
      expect(charged).toBe(1);
      expect(model.calls).toBe(2);
      const form = { chargeId: 'ch_1', at: '1970-01-01T00:00:00.000Z', sdk: { receipt: 'r/1' }, tags: {}, n: null };
      expect(seen).toEqual([form, form]);
      expect(JSON.parse(r.output!)).toEqual(form);
      expect((await store.listIdempotent(id)).map((e) => e.result)).toEqual([form]);
    });

    it('an idempotent result with no JSON form escapes the run as EFFECT_NOT_RECORDED after a failed marker, the model not told; recoverRuns leaves the run, the effect is not run again', async () => {
      for (const [which, make] of [
        ['bigint', () => ({ amount: 10n })],
        [
          'cycle',
          () => {
            const o: Record<string, unknown> = {};
            o.self = o;
            return o;
          },
        ],
      ] as const) {
        let ran = 0;
        const effect = idempotent(async function effect(_text: string) {
          ran++;
          return make();
        });
        // a tool that catches the error cannot turn it into a result either
        const { agent, model } = pausingAgent(`nr-${which}`, async ({ text }) =>
          effect(text).catch((e: Error) => `failed: ${e.message}`),
        );
        const id = `not-recorded-${which}-${n}`;
        await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'EFFECT_NOT_RECORDED' });
        expect(ran).toBe(1);
        expect(model.calls).toBe(1);
        // a failed marker: left running, every recoverRuns pass (a watch: every interval) ran the effect again
        const marker = await store.latest(id);
        expect(marker).toMatchObject({
          step: 'run_end',
          status: 'failed',
          nodeOutput: { error: { code: 'EFFECT_NOT_RECORDED' } },
        });
        expect(await store.listIdempotent(id)).toEqual([]);
        expect(await store.getLease(id)).toMatchObject({ holder: null, live: false });
        for (let pass = 0; pass < 2; pass++) {
          const report = await recoverRuns({ agents: [agent], store });
          expect(report.runs.map((r) => r.executionId)).not.toContain(id);
        }
        expect(ran).toBe(1);
        expect((await store.listExecutions({ state: 'failed' })).map((e) => e.executionId)).toContain(id);
      }
    });

    it('an idempotent result holding text no store can hold (a lone surrogate left by slicing an emoji, U+0000, in a value or a key) is recorded with U+FFFD, once; every pass sees that form', async () => {
      let charged = 0;
      const seen: unknown[] = [];
      const charge = idempotent(async function charge(_text: string) {
        charged++;
        return { preview: 'charged \u{1F4B3}'.slice(0, 9), ref: 'abc\u0000', 'k\uD800': 1 };
      });
      const { agent, model } = pausingAgent('fffd', async ({ text }) => {
        const r = await charge(text);
        seen.push(r);
        return r;
      });
      const id = `fffd-${n}`;
      expect((await agent.run('go', { executionId: id })).status).toBe('paused');
      expect((await agent.resume(id, { approved: true })).status).toBe('completed');
      const form = { preview: 'charged \uFFFD', ref: 'abc\uFFFD', 'k\uFFFD': 1 };
      expect({ charged, calls: model.calls, seen }).toEqual({ charged: 1, calls: 2, seen: [form, form] });
      expect((await store.listIdempotent(id)).map((e) => e.result)).toEqual([form]);
    });

    it('an idempotent result over the row limit escapes the run as EFFECT_NOT_RECORDED naming its size, recording nothing (a plane could not hold it, a restoring machine would repeat it)', async () => {
      let ran = 0;
      const report = idempotent(async function report(_text: string) {
        ran++;
        return { body: '\u6F22'.repeat(400_000) };
      });
      const { agent } = pausingAgent('big', async ({ text }) => report(text));
      const id = `too-big-${n}`;
      const err = await agent.run('go', { executionId: id }).catch((e: Error) => e);
      expect(err).toMatchObject({
        code: 'EFFECT_NOT_RECORDED',
        message: expect.stringMatching(/report.* 1200\d+ bytes .*over the 1048576-byte row limit/),
      });
      expect(ran).toBe(1);
      expect(await store.listIdempotent(id)).toEqual([]);
    });

    it('a run deleted while its idempotent effect runs records nothing: the runner stops (LEASE_LOST), and a new run under the id runs its own effect', async () => {
      const effects: string[] = [];
      let entered!: () => void;
      const inEffect = new Promise<void>((r) => (entered = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let hold = true;
      const charge = idempotent(async function charge(order: string) {
        effects.push(order);
        if (hold) {
          hold = false;
          entered();
          await released;
        }
        return { charged: order };
      });
      const { agent } = pausingAgent('del', async ({ text }) => charge(text));
      const id = `del-mid-effect-${n}`;
      const first = agent.run('o-7', { executionId: id }).catch((e: { code?: string }) => e);
      await inEffect;
      expect((await store.deleteExecution(id)).checkpoints).toBeGreaterThan(0);
      release();
      expect(await first).toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.listIdempotent(id)).toEqual([]);
      expect(await store.list(id)).toEqual([]);
      expect((await agent.run('o-7', { executionId: id })).status).toBe('paused');
      expect(effects).toHaveLength(2);
    });

    it('run, resume and fork refuse an execution id no store takes (INVALID_OPTIONS naming the id, not a lease), writing nothing', async () => {
      const agent = new Agent({
        name: 'ids',
        model: new ScriptedModel(() => ({ content: 'hi' })),
        tools: [],
        checkpointer: store,
      });
      const refused = async (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: { code?: string; message: string }) => [e.code, e.message],
        );
      expect(await refused(agent.run('go', { executionId: '' }))).toEqual([
        'INVALID_OPTIONS',
        'run: options.executionId: Too small: expected string to have >=1 characters; nothing was written',
      ]);
      expect(await refused(agent.run('go', { executionId: 'a\u0000b' }))).toEqual([
        'INVALID_OPTIONS',
        'run: options.executionId: must not contain control characters; nothing was written',
      ]);
      expect(await refused(agent.resume('..'))).toMatchObject([
        'INVALID_OPTIONS',
        expect.stringContaining("resume: executionId: must not be '.' or '..'"),
      ]);
      expect(await refused(agent.fork('x', { executionId: 'y'.repeat(201) }))).toMatchObject([
        'INVALID_OPTIONS',
        expect.stringContaining('fork: options.executionId: Too big: expected string to have <=200 characters'),
      ]);
      // a new run's id must be one a person can read and type back: not blank, nothing a terminal acts on
      expect(await refused(agent.run('go', { executionId: '  ' }))).toEqual([
        'INVALID_OPTIONS',
        'run: options.executionId: "  " is blank; nothing was written',
      ]);
      expect(await refused(agent.run('go', { executionId: 'evil\u202egnp.exe' }))).toEqual([
        'INVALID_OPTIONS',
        'run: options.executionId: "evil\\u202egnp.exe" holds characters a terminal acts on ("\\u202e"); nothing was written',
      ]);
      expect(await refused(agent.fork('x', { executionId: 'c1\u0085' }))).toMatchObject([
        'INVALID_OPTIONS',
        expect.stringContaining('holds characters a terminal acts on ("\\u0085")'),
      ]);
      expect(await store.listExecutions()).toEqual([]);
    });

    it("a run deleted while its effect runs and started again under its id: the new run's own effect runs once the first runner's record is refused (the deleted run's runner records nothing into it)", async () => {
      const id = `reuse-${n}`;
      const effects: string[] = [];
      /** `beforeCall`: in the tool, before the idempotent call; `inEffect`: inside the effect (the lease confirmed), before it happens. */
      const agentOf = (who: string, beforeCall: () => void, inEffect: () => Promise<void>) => {
        const charge = idempotent(
          async (order: string) => {
            await inEffect();
            effects.push(`${who}:${order}`);
            return { by: who };
          },
          { key: 'charge' },
        );
        const pay = tool({
          name: 'pay',
          description: 'pay',
          parameters: z.object({ order: z.string() }),
          execute: async ({ order }) => (beforeCall(), charge(order)),
        });
        const model = new ScriptedModel(({ turn }) =>
          turn === 0 ? { toolCalls: [{ name: 'pay', arguments: { order: 'o-1' } }] } : { content: 'done' },
        );
        return new Agent({ name: 'reuse', model, tools: [pay], checkpointer: store });
      };
      let openA!: () => void;
      let inA!: () => void;
      const enteredA = new Promise<void>((r) => (inA = r));
      const gateA = new Promise<void>((r) => (openA = r));
      const runA = agentOf(
        'A',
        () => {},
        () => (inA(), gateA),
      )
        .run('first', { executionId: id })
        .then(
          (r) => r.status as string,
          (e: { code?: string }) => e.code,
        );
      await enteredA;
      await store.deleteExecution(id);
      // the new run under the id calls the same effect while A's is in flight in this process
      let inC!: () => void;
      const enteredC = new Promise<void>((r) => (inC = r));
      const runC = agentOf(
        'C',
        () => inC(),
        async () => {},
      ).run('second', { executionId: id });
      await enteredC;
      openA();
      expect(await runA).toBe('LEASE_LOST');
      expect((await runC).status).toBe('completed');
      expect({ effects, entries: (await store.listIdempotent(id)).map((e) => e.result) }).toEqual({
        effects: ['A:o-1', 'C:o-1'],
        entries: [{ by: 'C' }],
      });
    });

    it('idempotent arguments with no stable JSON form are refused before fn runs, as a tool result', async () => {
      let ran = 0;
      const badArgs = idempotent(async function badArgs(_x: unknown) {
        ran++;
        return 1;
      });
      const t = tool({ name: 't', description: '', parameters: z.object({}), execute: async () => badArgs(() => 1) });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn === 0 ? { toolCalls: [{ name: 't', arguments: {} }] } : { content: toolResults[0].content },
      );
      const r = await new Agent({ name: 'a', model, tools: [t], checkpointer: store }).run('go');
      expect(r.output).toMatch(/no stable JSON form/);
      expect(ran).toBe(0);
    });

    it('a store failure under a tool writes no failed marker: it is thrown from run and the run resumes without repeating the effect', async () => {
      let armed = true;
      const faulty = await options.make({
        faults: (point) => {
          if (point === 'store.idempotency.afterCommit' && armed) {
            armed = false;
            throw new Error('connection lost after commit');
          }
        },
      });
      try {
        let sent = 0;
        const send = idempotent(async function send(_text: string) {
          sent++;
          return { sent };
        });
        const t = tool({
          name: 'act',
          description: '',
          parameters: z.object({ text: z.string() }),
          execute: async ({ text }) => send(text),
        });
        const model = new ScriptedModel(({ turn, toolResults }) =>
          turn === 0 || /failed/.test(toolResults[0]?.content ?? '')
            ? { toolCalls: [{ name: 'act', arguments: { text: 'hi' } }] }
            : { content: toolResults[0].content },
        );
        const agent = new Agent({ name: 'sf', model, tools: [t], checkpointer: faulty.store });
        const id = `store-failed-${n}`;
        await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'STORE_FAILED' });
        expect(await faulty.store.latest(id)).toMatchObject({ step: 'tool_call', status: 'completed' });
        expect(model.calls).toBe(1);
        const r = await agent.resume(id);
        expect(r).toMatchObject({ status: 'completed', output: '{"sent":1}' });
        expect(sent).toBe(1);
        expect((await faulty.store.list(id)).filter((row) => row.step === 'run_end').map((row) => row.status)).toEqual([
          'completed',
        ]);
      } finally {
        await faulty.close();
      }
    });

    it("a store failure in the loop's own write writes no failed marker: it is thrown from run and the run resumes", async () => {
      let puts = 0;
      const faulty = await options.make({
        faults: (point) => {
          if (point === 'store.put.afterCommit' && ++puts === 2) throw new Error('connection lost after commit');
        },
      });
      try {
        let ran = 0;
        const t = tool({ name: 'act', description: '', parameters: z.object({}), execute: () => `ran ${++ran}` });
        const model = new ScriptedModel(({ turn, toolResults }) =>
          turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: toolResults[0].content },
        );
        const agent = new Agent({ name: 'own', model, tools: [t], checkpointer: faulty.store });
        const id = `own-write-${n}`;
        await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'STORE_FAILED' });
        expect(await rowsOf(faulty.store, id)).toEqual([
          'turn:0 llm_call completed',
          'turn:0/tool:act tool_call completed',
        ]);
        expect(ran).toBe(0);
        expect(await agent.resume(id)).toMatchObject({ status: 'completed', output: 'ran 1' });
      } finally {
        await faulty.close();
      }
    });

    /** A store whose put number `at` (of each armed run) commits and then fails, as a connection lost after the commit: the run is cut off there. */
    const cutOffAfterPut = async (at: number) => {
      let puts = 0;
      let armed = false;
      const faulty = await options.make({
        faults: (point) => {
          if (point === 'store.put.afterCommit' && armed && ++puts === at) {
            armed = false;
            throw new Error('connection lost after commit');
          }
        },
      });
      const arm = () => {
        armed = true;
        puts = 0;
      };
      return { ...faulty, arm };
    };

    it("a tool the model made up, cut off once its row committed, is answered on resume as on the first pass ('does not exist') and the run completes, whatever the name ('/', ':', control characters, 600 characters): its row is marked, its path segment encoded", async () => {
      const faulty = await cutOffAfterPut(2);
      try {
        const act = tool({ name: 'act', description: '', parameters: z.object({}), execute: () => 'acted' });
        for (const [i, name] of [
          'lookup',
          'functions/lookup',
          'agent:x/tool:y',
          `\u0007${'n'.repeat(600)}`,
        ].entries()) {
          const model = new ScriptedModel(({ turn, toolResults }) =>
            turn === 0 ? { toolCalls: [{ name, arguments: {} }] } : { content: toolResults[0].content },
          );
          const agent = new Agent({ name: 'stray', model, tools: [act], checkpointer: faulty.store });
          const first = await agent.run('go', { executionId: `stray-first-${n}-${i}` });
          expect(first).toMatchObject({
            status: 'completed',
            output: `Tool '${name}' does not exist. Available: act.`,
          });
          const id = `stray-${n}-${i}`;
          faulty.arm();
          await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'STORE_FAILED' });
          const r = await agent.resume(id);
          expect(r).toMatchObject({ status: 'completed', output: first.output });
          expect(model.calls).toBe(4);
          const row = (await faulty.store.list(id))[1];
          expect(row).toMatchObject({
            step: 'tool_call',
            agentPath: expect.stringMatching(/^agent:stray\/tool:[^/]*$/),
          });
          expect(row.nodeId).toBe(`turn:0/${row.agentPath.slice('agent:stray/'.length)}`);
          if (name === 'functions/lookup') expect(row.agentPath).toBe('agent:stray/tool:functions%2Flookup');
          if (name === 'lookup') expect(row.agentPath).toBe('agent:stray/tool:lookup');
          // cut: it ends in a lone '%', never a tool's name
          if (name.length > 64) expect(row.agentPath).toBe(`agent:stray/tool:%07${'n'.repeat(60)}%`);
          expect(await faulty.store.readState(row)).toMatchObject({ toolName: name, toolMissing: true });
        }
        // a known tool's row carries no mark
        const model = new ScriptedModel(({ turn }) =>
          turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: 'done' },
        );
        const id = `known-${n}`;
        await new Agent({ name: 'stray', model, tools: [act], checkpointer: faulty.store }).run('go', {
          executionId: id,
        });
        const rows = await faulty.store.list(id);
        expect(await faulty.store.readState(rows[1])).not.toHaveProperty('toolMissing');
      } finally {
        await faulty.close();
      }
    });

    it('a row of a tool the agent had when it was written (a redeploy dropped it), or an unmarked one as earlier versions wrote for a made-up name, is refused TOOL_NOT_FOUND; nothing is written', async () => {
      const faulty = await cutOffAfterPut(2);
      try {
        let ran = 0;
        const act = tool({ name: 'act', description: '', parameters: z.object({}), execute: () => `ran ${++ran}` });
        const model = new ScriptedModel(({ turn, toolResults }) =>
          turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: toolResults[0].content },
        );
        const id = `dropped-${n}`;
        faulty.arm();
        await expect(
          new Agent({ name: 'deployer', model, tools: [act], checkpointer: faulty.store }).run('go', {
            executionId: id,
          }),
        ).rejects.toMatchObject({ code: 'STORE_FAILED' });
        const before = await faulty.store.list(id);
        const redeployed = new Agent({ name: 'deployer', model, tools: [], checkpointer: faulty.store });
        await expect(redeployed.resume(id)).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND', details: { tool: 'act' } });
        expect(await faulty.store.list(id)).toEqual(before);
        expect(ran).toBe(0);
        // rows without the mark: as an earlier version wrote them, and one whose mark names another call's tool
        const messages: Json[] = [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'c0', name: 'lookup', arguments: {} }] },
        ];
        for (const [old, extra] of [
          ['unmarked', {}],
          ['other', { toolMissing: true, toolName: 'other' }],
        ] as const) {
          const oldId = `old-${old}-${n}`;
          await faulty.store.put({
            executionId: oldId,
            prevId: null,
            nodeId: 'turn:0/tool:lookup',
            turn: 0,
            step: 'tool_call',
            status: 'completed',
            agentPath: 'agent:deployer/tool:lookup',
            state: { messages, turn: 0, toolName: 'lookup', toolCallId: 'c0', ...extra },
          });
          await expect(redeployed.resume(oldId)).rejects.toMatchObject({
            code: 'TOOL_NOT_FOUND',
            details: { tool: 'lookup' },
          });
          expect(await faulty.store.list(oldId)).toHaveLength(1);
        }
        // the agent that has the tool carries on
        expect(
          await new Agent({ name: 'deployer', model, tools: [act], checkpointer: faulty.store }).resume(id),
        ).toMatchObject({ status: 'completed', output: 'ran 1' });
      } finally {
        await faulty.close();
      }
    });

    it("an agent name a path cannot hold ('/', empty, over 256, a control character) is refused when the agent is made: INVALID_OPTIONS naming each problem; names that worked before still do", async () => {
      const model = new ScriptedModel(() => ({ content: 'hi' }));
      const made = (o: Partial<ConstructorParameters<typeof Agent>[0]>) => {
        try {
          new Agent({ name: 'ok', model, checkpointer: store, ...o });
          return null;
        } catch (e) {
          return e as { code?: string; details?: { problems?: string[] }; message: string };
        }
      };
      // paths are split on '/': its pauses were unresumable (CHECKPOINT_ERROR) and recoverRuns skipped its runs
      expect(made({ name: 'billing/refunds' })).toMatchObject({
        code: 'INVALID_OPTIONS',
        details: { problems: ['name: "billing/refunds" holds \'/\', which splits a path'] },
      });
      expect(made({ name: 'billing/refunds' })?.message).toBe(
        'Agent: name: "billing/refunds" holds \'/\', which splits a path',
      );
      expect(made({ name: '' })?.details?.problems).toEqual(['name: "" is empty']);
      expect(made({ name: `${'b'.repeat(260)}\n/`, leaseMs: 0, maxTurns: Number.NaN })?.details?.problems).toEqual([
        expect.stringMatching(
          /^name: "b{80}…" is 262 characters long, more than 256 and holds characters a terminal acts on \("\\u000a"\) and holds '\/', which splits a path$/,
        ),
        'leaseMs: must be an integer number of ms, at least 1 (got 0)',
        'maxTurns: must be an integer, at least 1 (got NaN)',
      ]);
      expect(made({ name: 7 as unknown as string })?.details?.problems).toEqual(['name: must be a string (got 7)']);
      expect(made({ maxTurns: 0 })?.details?.problems).toEqual(['maxTurns: must be an integer, at least 1 (got 0)']);
      // what a terminal acts on (C1 controls, DEL, bidi overrides) is refused as key names are, and shown escaped; a blank name too
      expect(made({ name: 'evil\u202egnp.exe\u0085\u007f' })?.details?.problems).toEqual([
        'name: "evil\\u202egnp.exe\\u0085\\u007f" holds characters a terminal acts on ("\\u202e", "\\u0085", "\\u007f")',
      ]);
      expect(made({ name: ' ' })?.details?.problems).toEqual(['name: " " is blank']);
      expect(made({ name: 'a\u200eb\u061c' })?.details?.problems).toEqual([
        'name: "a\\u200eb\\u061c" holds characters a terminal acts on ("\\u200e", "\\u061c")',
      ]);
      // tools given as plain objects and asTool() names: the same rule; tool() keeps what model APIs take
      const plain = { name: 'a/b', description: '', parameters: z.object({}), execute: () => 1 };
      expect(made({ tools: [plain, { ...plain, name: 'c' }, { ...plain, name: 'c' }] })?.details?.problems).toEqual([
        'tools[0].name: "a/b" holds \'/\', which splits a path',
        "tools[2]: duplicate tool name 'c'",
      ]);
      expect(() => tool({ ...plain, name: 'a b' })).toThrow(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          message: expect.stringMatching(/^tool: name: "a b" holds " "/),
        }),
      );
      expect(() => new Agent({ name: 'w', model }).asTool({ name: 'to/w' })).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }),
      );
      // names an agent could have before the check keep working (their runs stay resumable)
      for (const name of ['refund-bot', 'A_1', 'x'.repeat(256), 'Refund Bot', 'billing.eu', 'billing:eu', 'reçu'])
        expect(made({ name }), name).toBeNull();
      expect(made({ tools: [{ ...plain, name: 'Look Up' }] })).toBeNull();
      // two workers of one name would share the rows filed under agent:NAME; one worker under two tools is fine
      const worker = (name: string) => new Agent({ name, model, checkpointer: store });
      const w = worker('w');
      expect(
        made({ kind: 'supervisor', tools: [w.asTool({ name: 'one' }), worker('w').asTool({ name: 'two' })] })?.details
          ?.problems,
      ).toEqual([
        "tools[1] delegates to another worker agent named 'w' than tools[0] (a worker's rows are filed under agent:w)",
      ]);
      expect(made({ kind: 'supervisor', tools: [w.asTool({ name: 'one' }), w.asTool({ name: 'two' })] })).toBeNull();
    });

    it('explicit idempotency keys are checked before fn runs', async () => {
      let ran = 0;
      const effect = async function effect() {
        ran++;
        return 1;
      };
      expect(() => idempotent(effect, { key: 'k'.repeat(513) })).toThrow(
        expect.objectContaining({ code: 'INVALID_IDEMPOTENCY_KEY' }),
      );
      expect(() => idempotent(effect, { key: '' })).toThrow(
        expect.objectContaining({ code: 'INVALID_IDEMPOTENCY_KEY' }),
      );
      expect(() => idempotent(effect, { key: 'a\u0000b' })).toThrow(
        expect.objectContaining({ code: 'INVALID_IDEMPOTENCY_KEY' }),
      );
      const long = idempotent(async (text: string) => effect(), { key: (text) => `mail:${text}` });
      const { agent } = pausingAgent('keys', async ({ text }) => long(text).catch((e: { code: string }) => e.code));
      const id = `explicit-key-${n}`;
      expect((await agent.run('go', { executionId: id })).status).toBe('paused');
      const r = await agent.resume(id, { approved: true });
      expect(r.output).toBe('INVALID_IDEMPOTENCY_KEY');
      expect(ran).toBe(0);
      // not caught: a key built from the model's arguments is the model's to fix, so it reads a tool failure (nothing ran,
      // nothing escapes the run: escaping left a run no resume could finish, and recovery ran the tool's code again each pass)
      const uncaught = pausingAgent('keys-uncaught', async ({ text }) => long(text));
      const r2 = await uncaught.agent.run('go', { executionId: `uncaught-key-${n}` });
      expect(r2.status).toBe('completed');
      expect(r2.output).toMatch(
        /^Tool 'act' failed: the `key` function of .* is not a usable idempotency key: 605 characters, outside 1\.\.512/,
      );
      expect(uncaught.model.calls).toBe(4);
      expect(ran).toBe(0);
    });

    it('the default idempotency key is fixed-length: arguments over 512 characters run the effect once across resumes', async () => {
      let mails = 0;
      const sendEmail = idempotent(async function sendEmail(body: string) {
        mails++;
        return { id: `m${mails}` };
      });
      const { agent } = pausingAgent('mail', async ({ text }) => sendEmail(text.repeat(10)), 3);
      const id = `long-key-${n}`;
      expect((await agent.run('go', { executionId: id })).status).toBe('paused');
      for (let i = 0; i < 2; i++) expect((await agent.resume(id, { approved: true })).status).toBe('paused');
      expect((await agent.resume(id, { approved: true })).output).toBe('{"id":"m1"}');
      expect(mails).toBe(1);
      const [entry] = await store.listIdempotent(id);
      expect(entry.key).toMatch(/^sendEmail:[0-9a-f]{64}$/);
    });

    it('an entry under the pre-digest default key (an older version) is a hit: an upgrade does not repeat the effect', async () => {
      let ran = 0;
      const notify = idempotent(async function notify(who: string, n: number) {
        ran++;
        return `fresh ${who} ${n}`;
      });
      const id = `legacy-key-${n}`;
      await store.putIdempotent(id, `notify:${stableStringify(['oncall', 2])}`, 'sent before the upgrade');
      const t = tool({ name: 'act', description: '', parameters: z.object({}), execute: () => notify('oncall', 2) });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: toolResults[0].content },
      );
      const r = await new Agent({ name: 'up', model, tools: [t], checkpointer: store }).run('go', { executionId: id });
      expect(r.output).toBe('sent before the upgrade');
      expect(ran).toBe(0);
    });

    it('two calls with the same idempotency key in flight at once share one effect', async () => {
      const fired: string[] = [];
      const notify = idempotent(async function notify(who: string) {
        fired.push(who);
        await new Promise((r) => setTimeout(r, 50));
        return { paged: who, at: fired.length };
      });
      let results: unknown[] = [];
      const t = tool({
        name: 'act',
        description: '',
        parameters: z.object({}),
        execute: async () => {
          results = await Promise.all([notify('oncall'), notify('oncall'), notify('backup')]);
          return 'ok';
        },
      });
      const model = new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: 'done' },
      );
      const id = `inflight-${n}`;
      await new Agent({ name: 'in', model, tools: [t], checkpointer: store }).run('go', { executionId: id });
      expect(fired.sort()).toEqual(['backup', 'oncall']);
      expect(results[0]).toEqual(results[1]);
      expect((await store.listIdempotent(id)).length).toBe(2);
    });

    it('a function with a generic name needs an explicit idempotency key, refused at definition', async () => {
      const email = {
        sent: 0,
        async send(_to: string) {
          return `email-${++this.sent}`;
        },
      };
      const sms = {
        sent: 0,
        async send(_to: string) {
          return `sms-${++this.sent}`;
        },
      };
      const required = expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
      expect(() => idempotent(email.send.bind(email))).toThrow(required);
      expect(() => idempotent(async () => 1)).toThrow(required);
      expect(() => idempotent(new Function('return 1') as () => number)).toThrow(required);
      expect(() => idempotent(Object.defineProperty(async () => 1, 'name', { value: 'default' }))).toThrow(required);
      const sendEmail = idempotent(email.send.bind(email), { key: (to) => `email:${to}` });
      const sendSms = idempotent(sms.send.bind(sms), { key: (to) => `sms:${to}` });
      const t = tool({
        name: 'act',
        description: '',
        parameters: z.object({}),
        execute: async () => [await sendEmail('ann'), await sendSms('ann')].join(' '),
      });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: toolResults[0].content },
      );
      const r = await new Agent({ name: 'gen', model, tools: [t], checkpointer: store }).run('go');
      expect(r.output).toBe('email-1 sms-1');
    });

    it('a completed marker refuses resume; a failed marker is stepped over without re-running the tool', async () => {
      let fail = true;
      const base = refundAgent({ store, ledger }).model;
      const flaky = new ScriptedModel((ctx) => {
        if (ctx.turn === 1 && fail) {
          fail = false;
          throw new Error('provider returned 503');
        }
        return (
          base as unknown as { rule: (c: typeof ctx) => ReturnType<ConstructorParameters<typeof ScriptedModel>[0]> }
        ).rule(ctx);
      });
      const { agent } = refundAgent({ store, ledger, model: flaky });
      const id = `fail-${n}`;
      const r = await agent.run(refundRequest('1042', 20), { executionId: id });
      expect(r).toMatchObject({ status: 'failed', error: { message: 'provider returned 503' } });
      expect(await store.latest(id)).toMatchObject({ step: 'run_end', status: 'failed' });
      const again = await agent.resume(id);
      expect(again).toMatchObject({ status: 'completed', output: 'Refund for order 1042 is on its way.' });
      expect(ledger.charges().length).toBe(1);
      await expect(agent.resume(id)).rejects.toMatchObject({
        code: 'ALREADY_FINISHED',
        message: expect.stringMatching(/already finished/),
      });
    });

    it('fork branches a run under a new id, leaves the original untouched, refuses the marker', async () => {
      const { agent } = refundAgent({ store, ledger });
      const id = `fork-${n}`;
      await agent.run(refundRequest('1042', 20), { executionId: id });
      const before = await store.list(id);
      const f = await agent.fork(id);
      expect(f.status).toBe('completed');
      expect(f.executionId).not.toBe(id);
      expect(await store.list(id)).toEqual(before);
      const forkRows = await store.list(f.executionId);
      expect(forkRows[0]).toMatchObject({ step: 'fork_origin', parentId: before[2].id });
      await expect(agent.fork(id, { checkpointId: before[3].id })).rejects.toMatchObject({
        code: 'CHECKPOINT_ERROR',
        message: expect.stringMatching(/run-end marker/),
      });
      const withInput = await agent.fork(id, { checkpointId: before[0].id, input: 'also refund order 7 amount 5' });
      expect(withInput.status).toBe('completed');
      expect(ledger.charges().length).toBe(2);
    });

    it('a missing tool is named by CheckpointError (TOOL_NOT_FOUND) and the pause is not consumed', async () => {
      const id = `missing-${n}`;
      await refundAgent({ store, ledger }).agent.run(refundRequest('1', 5000), { executionId: id });
      const { agent: lacking } = refundAgent({ store, ledger, withoutRefundTool: true });
      await expect(lacking.resume(id, { approved: true })).rejects.toMatchObject({
        code: 'TOOL_NOT_FOUND',
        details: { tool: 'refund' },
        message: expect.stringMatching(/tool 'refund'/),
      });
      expect(await store.getPendingInterrupt(id)).not.toBeNull();
      expect((await refundAgent({ store, ledger }).agent.resume(id, { approved: true })).status).toBe('completed');
    });

    it('a run failed with MAX_TURNS right after its tools ran keeps their results: a resume never runs them again, and one with a higher maxTurns goes on from them to the model', async () => {
      let emails = 0;
      const send = tool({
        name: 'send_email',
        description: '',
        parameters: z.object({ to: z.string() }),
        execute: ({ to }) => `sent ${++emails} to ${to}`,
      });
      const model = new ScriptedModel(({ turn, toolResults }) =>
        turn < 2
          ? { toolCalls: [{ name: 'send_email', arguments: { to: `t${turn}` } }] }
          : { content: `last result: ${toolResults[0]?.content}` },
      );
      const agent = (maxTurns: number) =>
        new Agent({ name: 'mailer', model, tools: [send], checkpointer: store, maxTurns });
      const id = `max-turns-${n}`;
      expect(await agent(2).run('go', { executionId: id })).toMatchObject({
        status: 'failed',
        error: { code: 'MAX_TURNS' },
      });
      expect([emails, model.calls]).toEqual([2, 2]);
      // the same limit: failed again at once, no tool run, no model call
      expect(await agent(2).resume(id)).toMatchObject({ status: 'failed', error: { code: 'MAX_TURNS' } });
      expect([emails, model.calls]).toEqual([2, 2]);
      // a higher limit: the model reads the second email's result, which was not sent again
      expect(await agent(3).resume(id)).toMatchObject({ status: 'completed', output: 'last result: sent 2 to t1' });
      expect([emails, model.calls]).toEqual([2, 3]);
    });

    it('a 2,000-row run pauses at its end and resumes correctly (no fixed scan limits)', async () => {
      const step = tool({
        name: 'step',
        description: '',
        parameters: z.object({ i: z.number() }),
        execute: ({ i }) => (i === 999 ? interrupt('last', { i }).approved : i),
      });
      const model = new ScriptedModel(({ turn }) =>
        turn < 1000 ? { toolCalls: [{ name: 'step', arguments: { i: turn } }] } : { content: `done after ${turn}` },
      );
      const agent = new Agent({ name: 'long', model, tools: [step], checkpointer: store, maxTurns: 2000 });
      const id = `long-${n}`;
      const p = await agent.run('go', { executionId: id });
      expect(p.status).toBe('paused');
      expect((await store.list(id)).length).toBe(2001);
      const r = await agent.resume(id, { approved: true });
      expect(r).toMatchObject({ status: 'completed', output: 'done after 1000' });
      expect(model.calls).toBe(1001);
    });

    it('a supervisor delegates to a worker: paths nest, one execution holds it all, resume goes through it', async () => {
      const { agent: worker, model: workerModel } = refundAgent({ store, ledger });
      const supervisorModel = new ScriptedModel(({ turn, toolResults }) =>
        turn === 0
          ? { toolCalls: [{ name: 'refunds', arguments: { task: refundRequest('77', 9000) } }] }
          : { content: `supervisor: ${toolResults[0].content}` },
      );
      const sup = new Agent({
        name: 'desk',
        kind: 'supervisor',
        model: supervisorModel,
        tools: [worker.asTool({ name: 'refunds' })],
        checkpointer: store,
      });
      const id = `nested-${n}`;
      const p = await sup.run('handle refunds', { executionId: id });
      expect(p.status).toBe('paused');
      expect(p.pendingInterrupt?.agentPath).toBe('supervisor:desk/agent:refund-bot/tool:refund');
      const paths = (await store.list(id)).map((r) => r.agentPath);
      expect(paths).toEqual([
        'supervisor:desk',
        'supervisor:desk/tool:refunds',
        'supervisor:desk/agent:refund-bot',
        'supervisor:desk/agent:refund-bot/tool:refund',
        'supervisor:desk/agent:refund-bot/tool:refund',
      ]);
      const workerCalls = workerModel.calls;
      const r = await sup.resume(id, { approved: true });
      expect(r).toMatchObject({ status: 'completed', output: 'supervisor: Refund for order 77 is on its way.' });
      expect(workerModel.calls).toBe(workerCalls + 1);
      expect(supervisorModel.calls).toBe(2);
      expect(ledger.charges().length).toBe(1);
      expect((await store.list(id)).at(-1)).toMatchObject({ step: 'run_end', agentPath: 'supervisor:desk' });
    });
    it('resume of a run a live runner holds is refused with RunInProgress (holder, expiry) and writes nothing; once it finished, AlreadyFinished', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inTool = new Promise<void>((r) => (entered = r));
      const slow = tool({
        name: 'slow',
        description: 'waits',
        parameters: z.object({}),
        execute: async () => {
          entered();
          await gate;
          return 'ok';
        },
      });
      const model = new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'slow', arguments: {} }] } : { content: 'done' },
      );
      const make = () => new Agent({ name: 'held', model, tools: [slow], checkpointer: store });
      const id = `held-${n}`;
      const running = make().run('go', { executionId: id });
      await inTool;
      const rows = (await store.list(id)).length;
      const err = await make()
        .resume(id)
        .catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'RUN_IN_PROGRESS',
        details: { executionId: id, holder: expect.stringContaining(store.writerId) },
      });
      expect(Date.parse((err as { details: { expiresAt: string } }).details.expiresAt)).toBeGreaterThan(Date.now());
      expect((await store.list(id)).length).toBe(rows);
      await expect(make().run('go', { executionId: id })).rejects.toMatchObject({ code: 'EXECUTION_EXISTS' });
      release();
      expect((await running).status).toBe('completed');
      expect(await store.getLease(id)).toMatchObject({ holder: null, live: false });
      await expect(make().resume(id)).rejects.toMatchObject({ code: 'ALREADY_FINISHED' });
      expect((await store.list(id)).filter((r) => r.step === 'run_end')).toHaveLength(1);
    });

    it('a run that stops without a marker (a store failure escapes) gives its lease back: resume need not wait for expiry', async () => {
      let puts = 0;
      const faulty = await options.make({
        faults: (point) => {
          if (point === 'store.put.afterCommit' && ++puts === 2) throw new Error('connection lost after commit');
        },
      });
      try {
        const act = tool({ name: 'act', description: '', parameters: z.object({}), execute: () => 'done' });
        const model = new ScriptedModel(({ turn }) =>
          turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: 'done' },
        );
        const agent = new Agent({ name: 'escapes', model, tools: [act], checkpointer: faulty.store });
        const id = `escape-${n}`;
        await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'STORE_FAILED' });
        expect(await faulty.store.getLease(id)).toMatchObject({ holder: null, live: false });
        expect((await faulty.store.listExecutions({ state: 'running' })).map((e) => e.executionId)).toContain(id);
      } finally {
        await faulty.close();
      }
    });
    it("a long tool keeps its lease: the unref'd timer renews it while the tool runs, with no write in between", async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const long = tool({
        name: 'long',
        description: 'waits',
        parameters: z.object({}),
        execute: async () => (await gate, 'ok'),
      });
      const model = new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'long', arguments: {} }] } : { content: 'done' },
      );
      const agent = new Agent({ name: 'long', model, tools: [long], checkpointer: store, leaseMs: 300 });
      const id = `renew-${n}`;
      const running = agent.run('go', { executionId: id });
      // no write happens while the tool waits: every later expiry is the timer's renewal
      const seen = new Set<string>();
      const deadline = Date.now() + 60_000;
      while (seen.size < 4) {
        if (Date.now() > deadline) throw new Error(`the lease was renewed ${seen.size - 1} times in 60 s`);
        const l = await store.getLease(id);
        if (l?.holder && l.expiresAt && (await store.list(id)).some((r) => r.step === 'tool_call'))
          seen.add(l.expiresAt);
        await new Promise((r) => setTimeout(r, 30));
      }
      const info = await store.getLease(id);
      expect(info).toMatchObject({ epoch: 1, holder: expect.stringContaining(store.writerId) });
      release();
      expect((await running).status).toBe('completed');
      expect(await store.getLease(id)).toMatchObject({ holder: null, epoch: 1 });
    });
  });
}
