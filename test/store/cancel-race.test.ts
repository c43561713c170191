/**
 * Cancel racing a resume (claim) and racing a running runner's fenced writes,
 * on SQLite and on real Postgres. The outcome must be clean: either the resume
 * wins (then the cancel marker follows and the runner stops with RUN_CANCELLED)
 * or the cancel wins (the resume is refused with RUN_CANCELLED /
 * ALREADY_RESUMED). Neither call may fail with a raw database error (on
 * Postgres: 40P01 "deadlock detected" from an inverted lock order between
 * cancel, claim and a fenced put), and the effect runs at most once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, idempotent, interrupt, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

interface Backend {
  name: 'sqlite' | 'postgres';
  /** A fresh store and a way to open a second handle on it (its own connection or pool). */
  make(): Promise<{ store: Checkpointer; reopen(): Checkpointer }>;
}

const tmp = scratchDir('waymark-cancel-race-');
const pg = await pgReady('cancel races');
let db: TestDatabase | null = null;
const open: Checkpointer[] = [];
beforeAll(async () => {
  if (pg) db = await createTestDatabase('waymark_cancel_race');
});
afterAll(async () => {
  for (const s of open) await s.close().catch(() => {});
  await db?.drop();
  tmp.cleanup();
});

let n = 0;
const list: Backend[] = [
  {
    name: 'sqlite',
    async make() {
      const path = tmp.file(`s${++n}.db`);
      const mk = () => {
        const s = new SqliteCheckpointer({ path });
        open.push(s);
        return s;
      };
      return { store: mk(), reopen: mk };
    },
  },
];
if (pg)
  list.push({
    name: 'postgres',
    async make() {
      const schema = `cr${++n}`;
      const mk = () => {
        const s = new PostgresCheckpointer({ url: db!.url, schema, max: 4 });
        open.push(s);
        return s;
      };
      const store = mk();
      await store.setup();
      return { store, reopen: mk };
    },
  });

function pauseAgent(store: Checkpointer, effects: string[]) {
  const charge = idempotent(async function charge(id: string) {
    effects.push(id);
    return { ok: true };
  });
  const pay = tool({
    name: 'pay',
    description: 'pay',
    parameters: z.object({ id: z.string() }),
    execute: async ({ id }) => {
      const d = interrupt('approve', { id });
      if (!d.approved) return 'declined';
      return charge(id);
    },
  });
  const model = new ScriptedModel(({ turn, lastUser }) =>
    turn === 0 ? { toolCalls: [{ name: 'pay', arguments: { id: lastUser } }] } : { content: 'done' },
  );
  return new Agent({ name: 'cancelrace', model, tools: [pay], checkpointer: store });
}

function busyAgent(store: Checkpointer) {
  // a tool that yields to the event loop, so the cancel (another handle) interleaves with the run's writes
  const step = tool({
    name: 'step',
    description: 'step',
    parameters: z.object({ n: z.number() }),
    execute: async ({ n }) => (await new Promise((r) => setImmediate(r)), `ok ${n}`),
  });
  const model = new ScriptedModel(({ turn }) =>
    turn < 200 ? { toolCalls: [{ name: 'step', arguments: { n: turn } }] } : { content: 'done' },
  );
  return new Agent({ name: 'busy', model, tools: [step], checkpointer: store, maxTurns: 500 });
}

const codeOf = (e: unknown) => (e as { code?: string })?.code ?? `raw: ${(e as Error)?.message}`;
const describeErr = (e: unknown) => `${codeOf(e)} (${String((e as Error)?.message).slice(0, 90)})`;

for (const b of list) {
  describe(`cancel races (${b.name})`, () => {
    it('cancel racing a claim: no raw database error on either side, effect at most once', async () => {
      const { store, reopen } = await b.make();
      const other = reopen();
      const effects: string[] = [];
      const bad: string[] = [];
      for (let i = 0; i < 40; i++) {
        const id = `cr-${b.name}-${i}`;
        const p = await pauseAgent(store, effects).run(id, { executionId: id });
        expect(p.status).toBe('paused');
        const [r, c] = await Promise.allSettled([
          pauseAgent(store, effects).resume(id, { approved: true }),
          other.cancel(id, { reason: 'race' }),
        ]);
        if (r.status === 'rejected' && !['RUN_CANCELLED', 'ALREADY_RESUMED'].includes(codeOf(r.reason)))
          bad.push(`resume ${id}: ${describeErr(r.reason)}`);
        // a resume that finished the run before the cancel came: ALREADY_FINISHED is the honest answer
        const finished = r.status === 'fulfilled' && r.value.status === 'completed';
        if (c.status === 'rejected' && !(finished && codeOf(c.reason) === 'ALREADY_FINISHED'))
          bad.push(`cancel ${id}: ${describeErr(c.reason)}`);
      }
      expect(bad, bad.join('\n')).toEqual([]);
      expect(new Set(effects).size).toBe(effects.length);
    });

    it('cancel racing a busy runner: the runner stops with RUN_CANCELLED and the cancel succeeds, no raw database error', async () => {
      const { store, reopen } = await b.make();
      const other = reopen();
      const bad: string[] = [];
      for (let i = 0; i < 15; i++) {
        const id = `cb-${b.name}-${i}`;
        const running = busyAgent(store).run('go', { executionId: id });
        // let it write a few rows first
        for (;;) {
          const l = await other.latest(id);
          if (l && l.seq >= 2 + (i % 5)) break;
          await new Promise((r) => setTimeout(r, 1));
        }
        const [r, c] = await Promise.allSettled([running, other.cancel(id, { reason: 'race' })]);
        if (r.status === 'rejected' && codeOf(r.reason) !== 'RUN_CANCELLED')
          bad.push(`runner ${id}: ${describeErr(r.reason)}`);
        if (r.status === 'fulfilled' && r.value.status !== 'completed')
          bad.push(`runner ${id}: ${r.value.status} ${JSON.stringify(r.value.error)}`);
        const finished = r.status === 'fulfilled' && r.value.status === 'completed';
        if (c.status === 'rejected' && !(finished && codeOf(c.reason) === 'ALREADY_FINISHED'))
          bad.push(`cancel ${id}: ${describeErr(c.reason)}`);
      }
      expect(bad, bad.join('\n')).toEqual([]);
    });

    it('cancel racing a prune and deletes of failed runs that had leases: each cancel lands or finds the run gone, the prune and deletes complete', async () => {
      const { store, reopen } = await b.make();
      const other = reopen();
      const third = reopen();
      const bad: string[] = [];
      for (let round = 0; round < 4; round++) {
        const ids = Array.from({ length: 12 }, (_, i) => `cp-${b.name}-${round}-${i}`);
        for (const id of ids) {
          // a lease row (released by the run-end marker) and a failed run: both a cancel and a prune take it
          const lease = await store.acquireLease(id, { holder: `h-${id}`, ttlMs: 60_000 });
          const first = await store.put(
            {
              executionId: id,
              prevId: null,
              nodeId: 'turn:0',
              turn: 0,
              step: 'llm_call',
              status: 'completed',
              agentPath: 'agent:t',
              state: { messages: [] },
            },
            { lease },
          );
          await store.put(
            {
              executionId: id,
              prevId: first.id,
              nodeId: 'run_end',
              turn: 0,
              step: 'run_end',
              status: 'failed',
              agentPath: 'agent:t',
              parentId: first.id,
              state: { messages: [] },
            },
            { lease },
          );
        }
        // and a delete of every third run, from a third handle
        const gone = ids.filter((_, i) => i % 3 === 1);
        const [p, ds, ...cs] = await Promise.allSettled([
          store.prune({ olderThan: new Date(Date.now() + 60_000), includeUnsynced: true }),
          Promise.all(gone.map((id) => third.deleteExecution(id))),
          ...ids.map((id) => other.cancel(id, { reason: 'race' })),
        ]);
        if (p.status === 'rejected') bad.push(`prune round ${round}: ${describeErr(p.reason)}`);
        if (ds.status === 'rejected') bad.push(`delete round ${round}: ${describeErr(ds.reason)}`);
        cs.forEach((c, i) => {
          if (c.status === 'rejected' && codeOf(c.reason) !== 'EXECUTION_NOT_FOUND')
            bad.push(`cancel ${ids[i]}: ${describeErr(c.reason)}`);
        });
      }
      expect(bad, bad.join('\n')).toEqual([]);
    });
  });
}
