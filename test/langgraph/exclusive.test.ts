/**
 * `WaymarkSaver.exclusive`: a thread held by one graph call at a time. Two
 * worker processes answering one interrupted thread at once charge once
 * between them (and twice without it: the race is real); a holder SIGKILLed
 * keeps the thread until its lease expires, then another takes it and charges
 * once; a holder whose thread was taken over while it stalled writes nothing
 * more and stops before its next node.
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Annotation, Command, END, interrupt, START, StateGraph } from '@langchain/langgraph';
import type { RunnableConfig } from '@langchain/core/runnables';
import { afterAll, describe, expect, it } from 'vitest';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { ErrorCode } from '../../shared/errors.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = new URL('./exclusive-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-lg-exclusive-');
afterAll(() => tmp.cleanup());

const charges = (ledger: string) =>
  existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean).length : 0;

/**
 * Resumers of one thread, started together once each is ready. A resumer that reaches the charge waits there
 * until every other one has reached it too or ended (refused): so the exclusive case is a real overlap, not two
 * calls one after the other. Resolves with each one's outcome (`killed` for a SIGKILL).
 */
async function resumeTogether(
  db: string,
  thread: string,
  ledger: string,
  how: 'exclusive' | 'plain',
  count: number,
  o: { ttlMs?: number; kill?: boolean } = {},
): Promise<string[]> {
  const children = Array.from({ length: count }, () =>
    forkTs(CHILD, ['resume', db, thread, ledger, how, String(o.ttlMs ?? 30_000), ...(o.kill ? ['kill'] : [])]),
  );
  await Promise.all(children.map((c) => nextMessage(c, (m) => m === 'ready')));
  const settled = new Set<number>();
  const entered = new Set<number>();
  const released = new Set<number>();
  const releaseWhenAllThere = () => {
    if (entered.size + settled.size < count) return;
    for (const i of entered) {
      if (released.has(i)) continue;
      released.add(i);
      children[i].send('release');
    }
  };
  const outcomes = children.map(
    (c, i) =>
      new Promise<string>((resolve) => {
        const done = (outcome: string) => {
          settled.add(i);
          releaseWhenAllThere();
          resolve(outcome);
        };
        c.on('message', (m: string | { outcome?: string }) => {
          if (m === 'entered') {
            entered.add(i);
            releaseWhenAllThere();
          } else if (typeof m === 'object') done(m.outcome!);
        });
        c.on('exit', (code, signal) => done(signal === 'SIGKILL' ? 'killed' : `exited ${code}`));
      }),
  );
  for (const c of children) c.send('go');
  const result = await Promise.all(outcomes);
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : null)));
  return result;
}

let pgDb: TestDatabase | null = null;
afterAll(() => pgDb?.drop());

/** Two savers on one store (one SQLite file, or one Postgres schema), and a way to let a lease run out as a stalled holder's would. */
async function twoSavers(kind: 'sqlite' | 'postgres'): Promise<{
  a: WaymarkSaver;
  b: WaymarkSaver;
  expire: (executionId: string) => Promise<void>;
  close: () => Promise<void>;
}> {
  if (kind === 'sqlite') {
    const file = tmp.file('fence.db');
    const a = new WaymarkSaver(new SqliteCheckpointer({ path: file, writerId: 'a' }));
    const b = new WaymarkSaver(new SqliteCheckpointer({ path: file, writerId: 'b' }));
    await a.setup();
    const expire = async (executionId: string) => {
      const raw = new Database(file);
      raw.prepare('UPDATE leases SET expires_at = 0 WHERE execution_id = ?').run(executionId);
      raw.close();
    };
    return { a, b, expire, close: async () => void (await Promise.all([a.store.close(), b.store.close()])) };
  }
  pgDb ??= await createTestDatabase('waymark_lg_exclusive');
  const url = pgDb.url;
  const a = new WaymarkSaver(new PostgresCheckpointer({ url, schema: 'fence', writerId: 'a', max: 2 }));
  const b = new WaymarkSaver(new PostgresCheckpointer({ url, schema: 'fence', writerId: 'b', max: 2 }));
  await a.setup();
  await b.setup();
  const expire = async (executionId: string) => {
    const raw = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await raw`UPDATE fence.leases SET expires_at = 0 WHERE execution_id = ${executionId}`;
    } finally {
      await raw.end({ timeout: 2 });
    }
  };
  return { a, b, expire, close: async () => void (await Promise.all([a.store.close(), b.store.close()])) };
}

/** A saver on a SQLite store of its own, set up, for `fn`; the store is closed after it. */
async function withSaver(
  options: ConstructorParameters<typeof SqliteCheckpointer>[0],
  fn: (saver: WaymarkSaver) => Promise<void>,
): Promise<void> {
  const saver = new WaymarkSaver(new SqliteCheckpointer(options));
  await saver.setup();
  try {
    await fn(saver);
  } finally {
    await saver.store.close();
  }
}

describe('WaymarkSaver.exclusive: one graph call on a thread at a time', () => {
  it('two processes answering one interrupted thread at once: inside exclusive one runs it and the other is refused RUN_IN_PROGRESS, one charge; without it both charge', async () => {
    for (const how of ['exclusive', 'plain'] as const) {
      const db = tmp.file(`race-${how}.db`);
      const ledger = tmp.file(`race-${how}.ledger`);
      const started = await runTs(CHILD, ['start', db, 'acct-7']);
      expect(started.code, started.stderr).toBe(0);
      const outcomes = await resumeTogether(db, 'acct-7', ledger, how, 2);
      if (how === 'exclusive') {
        expect(outcomes.sort()).toEqual(['RUN_IN_PROGRESS', 'done']);
        expect(charges(ledger)).toBe(1);
      } else {
        expect(outcomes).toEqual(['done', 'done']);
        expect(charges(ledger), 'both plain resumers reached the charge at once').toBe(2);
      }
    }
  }, 180_000);

  it('a holder SIGKILLed before its charge keeps the thread until its lease expires; then another process takes it and charges once', async () => {
    const db = tmp.file('crash.db');
    const ledger = tmp.file('crash.ledger');
    expect((await runTs(CHILD, ['start', db, 'acct-8'])).code).toBe(0);
    const ttlMs = 5000;
    expect(await resumeTogether(db, 'acct-8', ledger, 'exclusive', 1, { ttlMs, kill: true })).toEqual(['killed']);
    const killedAt = Date.now();
    // a worker that comes at once is refused and runs nothing
    const saver = new WaymarkSaver(new SqliteCheckpointer({ path: db }));
    let ran = false;
    try {
      const early = await saver
        .exclusive({ configurable: { thread_id: 'acct-8' } }, () => (ran = true))
        .catch((e: { code?: string; details?: { holder?: string } }) => e);
      expect(Date.now() - killedAt, 'refused well within the ttl').toBeLessThan(ttlMs);
      expect(early).toMatchObject({ code: ErrorCode.RUN_IN_PROGRESS });
      expect(ran).toBe(false);
    } finally {
      await saver.store.close();
    }
    expect(charges(ledger)).toBe(0);
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + ttlMs + 200 - Date.now())));
    expect(await resumeTogether(db, 'acct-8', ledger, 'exclusive', 1, { ttlMs })).toEqual(['done']);
    expect(charges(ledger)).toBe(1);
  }, 180_000);

  it.each(['sqlite', 'postgres'] as const)(
    '%s: a holder whose thread was taken over while it stalled writes nothing more: its task result is kept for the new holder, its call fails LEASE_LOST before the next node',
    async (kind) => {
      if (kind === 'postgres' && !(await pgReady('LangGraph exclusive on Postgres'))) return;
      const ledger = tmp.file(`fence-${kind}.ledger`);
      writeFileSync(ledger, '');
      const State = Annotation.Root({
        steps: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
      });
      let entered!: () => void;
      const atGate = new Promise<void>((r) => (entered = r));
      const build = (saver: WaymarkSaver, gate: Promise<void>) =>
        new StateGraph(State)
          .addNode('slow', async () => {
            entered();
            await gate;
            return { steps: ['slow'] };
          })
          .addNode('charge', () => {
            writeFileSync(ledger, `${readFileSync(ledger, 'utf8')}charge\n`);
            return { steps: ['charge'] };
          })
          .addEdge(START, 'slow')
          .addEdge('slow', 'charge')
          .addEdge('charge', END)
          .compile({ checkpointer: saver });
      const { a, b, expire, close } = await twoSavers(kind);
      const config = { configurable: { thread_id: 'acct-9' } };
      try {
        let open!: () => void;
        const gate = new Promise<void>((r) => (open = r));
        const first = a
          .exclusive(config, (held) => build(a, gate).invoke({ steps: [] }, held), { ttlMs: 60_000 })
          .then(
            () => 'done',
            (e: { code?: string }) => e.code ?? String(e),
          );
        // the checkpoint its task runs from (LangGraph's step 0, the row's turn 1) may still be on its way to the
        // store (LangGraph does not wait for the first one): the stall comes once it is in
        await atGate;
        const stored = Date.now() + 30_000;
        while (((await a.store.latest('acct-9'))?.turn ?? 0) < 1) {
          if (Date.now() > stored) throw new Error("the task's checkpoint (turn 1) was not stored within 30 s");
          await new Promise((r) => setTimeout(r, 10));
        }
        expect((await a.store.getLease('acct-9'))?.holder).toMatch(/^a#/);
        // a stall past the ttl, as another process sees it: the lease ran out without a renewal
        await expire('acct-9');
        expect(await b.exclusive(config, (held) => build(b, Promise.resolve()).invoke(null, held))).toMatchObject({
          steps: ['slow', 'charge'],
        });
        expect(charges(ledger)).toBe(1);
        const entries = (await a.store.listIdempotent('acct-9')).length;
        open();
        expect(await first).toBe(ErrorCode.LEASE_LOST);
        // LangGraph writes the task's result and the step's checkpoint side by side and answers with the first
        // refusal (often the checkpoint's): the result's write may still be finishing
        const deadline = Date.now() + 30_000;
        while ((await a.store.listIdempotent('acct-9')).length === entries && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        expect(
          (await a.store.listIdempotent('acct-9')).length,
          "the stalled holder's task result is kept (its effect happened)",
        ).toBe(entries + 1);
        expect(charges(ledger), 'the stalled holder never reached its next node').toBe(1);
        const state = await build(b, Promise.resolve()).getState(config);
        expect(state.values).toMatchObject({ steps: ['slow', 'charge'] });
        expect(state.next).toEqual([]);
        // the thread is free again: a later call holds it
        expect(await b.exclusive(config, async () => 'again')).toBe('again');
      } finally {
        await close();
      }
    },
    180_000,
  );

  it.each(['sqlite', 'postgres'] as const)(
    "%s: a stalled holder's late answer never answers the next pause: taken over after its check, its graph call fails LEASE_LOST at its first read, and an answer it writes after the takeover is refused, nothing kept",
    async (kind) => {
      if (kind === 'postgres' && !(await pgReady('LangGraph exclusive on Postgres'))) return;
      const ledger = tmp.file(`late-${kind}.ledger`);
      writeFileSync(ledger, '');
      const State = Annotation.Root({ q1: Annotation<string>(), q2: Annotation<string>() });
      const build = (saver: WaymarkSaver) =>
        new StateGraph(State)
          .addNode('ask1', () => ({ q1: interrupt('refund $50?') as string }))
          .addNode('ask2', () => ({ q2: interrupt('also refund $5000?') as string }))
          .addNode('charge', (st) => {
            if (st.q2 === 'yes') writeFileSync(ledger, `${readFileSync(ledger, 'utf8')}charge ${st.q1} ${st.q2}\n`);
            return {};
          })
          .addEdge(START, 'ask1')
          .addEdge('ask1', 'ask2')
          .addEdge('ask2', 'charge')
          .addEdge('charge', END)
          .compile({ checkpointer: saver });
      const { a, b, expire, close } = await twoSavers(kind);
      const open = async (thread: string) =>
        (await build(b).getState({ configurable: { thread_id: thread } })).tasks.flatMap((t) =>
          t.interrupts.map((i) => i.value),
        );
      try {
        // (1) the GUIDE's check, then a stall past the lease; another worker takes the thread and answers the first question
        const one = { configurable: { thread_id: 'late-1' } };
        await build(a).invoke({}, one);
        let stalled!: () => void;
        const resumeNow = new Promise<void>((r) => (stalled = r));
        let checked!: () => void;
        const atCheck = new Promise<void>((r) => (checked = r));
        const late = a
          .exclusive(
            one,
            async (held) => {
              expect(await open('late-1')).toEqual(['refund $50?']);
              checked();
              await resumeNow;
              return build(a).invoke(new Command({ resume: 'yes' }), held);
            },
            { ttlMs: 60_000 },
          )
          .then(
            () => 'done',
            (e: { code?: string }) => e.code ?? String(e),
          );
        await atCheck;
        await expire('late-1');
        await b.exclusive(one, (held) => build(b).invoke(new Command({ resume: 'yes' }), held));
        expect(await open('late-1')).toEqual(['also refund $5000?']);
        const entries = (await a.store.listIdempotent('late-1')).length;
        stalled();
        expect(await late).toBe(ErrorCode.LEASE_LOST);
        expect((await a.store.listIdempotent('late-1')).length, 'the late holder wrote nothing').toBe(entries);
        // the second question is still open, and its approver's "no" is the answer: nothing charged
        expect(await open('late-1')).toEqual(['also refund $5000?']);
        await b.exclusive(one, (held) => build(b).invoke(new Command({ resume: 'no' }), held));
        expect(charges(ledger)).toBe(0);
        expect((await build(b).getState(one)).values).toMatchObject({ q1: 'yes', q2: 'no' });

        // (2) taken over between its first read and its answer's write: the answer is refused, nothing kept
        const two = { configurable: { thread_id: 'late-2' } };
        await build(a).invoke({}, two);
        const real = a.store.getIdempotent.bind(a.store);
        let takenOver = false;
        let afterB = -1;
        a.store.getIdempotent = async (executionId, key) => {
          if (!takenOver && executionId === 'late-2') {
            takenOver = true;
            await expire('late-2');
            await b.exclusive(two, (held) => build(b).invoke(new Command({ resume: 'yes' }), held));
            afterB = (await b.store.listIdempotent('late-2')).length;
          }
          return real(executionId, key);
        };
        const outcome = await a
          .exclusive(two, (held) => build(a).invoke(new Command({ resume: 'late-yes' }), held), { ttlMs: 60_000 })
          .then(
            () => 'done',
            (e: { code?: string }) => e.code ?? String(e),
          );
        a.store.getIdempotent = real;
        expect(takenOver).toBe(true);
        expect(outcome).toBe(ErrorCode.LEASE_LOST);
        // a's answer is not kept (a task result of its, whose effect happened, may be: on the checkpoint it read)
        const resumes = (await a.store.listIdempotent('late-2')).flatMap((e) =>
          (e.result as { writes: { channel: string; value: unknown }[] }).writes.filter(
            (w) => w.channel === '__resume__',
          ),
        );
        expect(JSON.stringify(resumes)).not.toContain('late-yes');
        expect(resumes.length).toBeGreaterThan(0);
        expect(afterB).toBeGreaterThan(0);
        expect(await open('late-2')).toEqual(['also refund $5000?']);
        expect((await build(b).getState(two)).values).toMatchObject({ q1: 'yes' });

        // (3) the new holder moved the thread on without running its next node (a state update): the stalled holder's
        // call, reading that checkpoint, would run the node (its effect) before its first write was refused
        const Step = Annotation.Root({ note: Annotation<string>() });
        const ran: string[] = [];
        const stepGraph = (saver: WaymarkSaver) =>
          new StateGraph(Step)
            .addNode('prepare', () => ({ note: 'prepared' }))
            .addNode('send', (st) => (ran.push(`send ${st.note}`), {}))
            .addEdge(START, 'prepare')
            .addEdge('prepare', 'send')
            .addEdge('send', END)
            .compile({ checkpointer: saver, interruptBefore: ['send'] });
        const three = { configurable: { thread_id: 'late-3' } };
        await stepGraph(a).invoke({}, three);
        let go!: () => void;
        const wake = new Promise<void>((r) => (go = r));
        let looked!: () => void;
        const hasLooked = new Promise<void>((r) => (looked = r));
        const stale = a
          .exclusive(
            three,
            async (held) => {
              looked();
              await wake;
              return stepGraph(a).invoke(null, held);
            },
            { ttlMs: 60_000 },
          )
          .then(
            () => 'done',
            (e: { code?: string }) => e.code ?? String(e),
          );
        await hasLooked;
        await expire('late-3');
        await b.exclusive(three, (held) => stepGraph(b).updateState(held, { note: 'edited by b' }));
        go();
        expect(await stale).toBe(ErrorCode.LEASE_LOST);
        expect(ran, 'the stalled holder ran no node').toEqual([]);
        expect(charges(ledger)).toBe(0);
      } finally {
        await close();
      }
    },
    180_000,
  );

  it('a graph with a subgraph runs whole inside exclusive: the subgraph namespace writes after a fenced renewal each, and a thread taken over refuses them', async () => {
    await withSaver({ path: tmp.file('sub.db'), writerId: 'sub' }, async (saver) => {
      const State = Annotation.Root({
        steps: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
      });
      let taken = false;
      let seconds = 0;
      const inner = new StateGraph(State)
        .addNode('first', async () => {
          if (taken) {
            // another holder took the thread while this one stalled here
            const raw = new Database(tmp.file('sub.db'));
            raw.prepare('UPDATE leases SET expires_at = 0 WHERE execution_id = ?').run('sub-1');
            raw.close();
            await saver.store.acquireLease('sub-1', { holder: 'other#1', ttlMs: 60_000 });
          }
          return { steps: ['inner-1'] };
        })
        .addNode('second', () => {
          seconds++;
          return { steps: ['inner-2'] };
        })
        .addEdge(START, 'first')
        .addEdge('first', 'second')
        .addEdge('second', END)
        .compile();
      const outer = new StateGraph(State)
        .addNode('inner', inner)
        .addEdge(START, 'inner')
        .addEdge('inner', END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: 'sub-1' } };
      expect(await saver.exclusive(config, (held) => outer.invoke({ steps: [] }, held))).toMatchObject({
        steps: ['inner-1', 'inner-2'],
      });
      const namespaces = (await saver.store.listExecutions({ limit: 10 })).map((e) => e.executionId);
      expect(
        namespaces.some((id) => id.startsWith('sub-1|inner')),
        namespaces.join(', '),
      ).toBe(true);

      taken = true;
      const again = { configurable: { thread_id: 'sub-1' } };
      const e = await saver
        .exclusive(again, (held) => outer.invoke({ steps: [] }, held))
        .catch((x: { code?: string }) => x.code);
      expect(e).toBe(ErrorCode.LEASE_LOST);
      expect(seconds, "the subgraph's next node never ran: its namespace's write was refused first").toBe(1);
      expect((await saver.store.getLease('sub-1'))?.holder).toBe('other#1');
    });
  });

  it('a graph with two interrupts: an answer by id applies to that interrupt only; the same answer again, late, leaves the next one open and runs nothing', async () => {
    await withSaver({ path: tmp.file('two.db') }, async (saver) => {
      const State = Annotation.Root({
        log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
      });
      const graph = new StateGraph(State)
        .addNode('refund', () => ({ log: [`refund ${interrupt('refund?')}`] }))
        .addNode('close', () => ({ log: [`close ${interrupt('close the account?')}`] }))
        .addEdge(START, 'refund')
        .addEdge('refund', 'close')
        .addEdge('close', END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: 'two' } };
      const paused = await graph.invoke({ log: [] }, config);
      const first = (paused as unknown as { __interrupt__: { id: string }[] }).__interrupt__[0].id;
      const answer = () =>
        saver.exclusive(config, (held) => graph.invoke(new Command({ resume: { [first]: 'approved' } }), held));
      expect(await answer()).toMatchObject({ log: ['refund approved'] });
      const open = async () => (await graph.getState(config)).tasks.flatMap((t) => t.interrupts.map((i) => i.value));
      expect(await open()).toEqual(['close the account?']);
      // a late worker with the same job
      expect(await answer()).toMatchObject({ log: ['refund approved'] });
      expect(await open()).toEqual(['close the account?']);
    });
  });

  it('bad arguments are named together, with a stable code, and nothing is held; a returned stream is cancelled and refused', async () => {
    await withSaver({ path: tmp.file('bad.db') }, async (saver) => {
      const problems = async (config: RunnableConfig & { durability?: string }, fn: unknown, options: unknown) => {
        const e = (await saver.exclusive(config, fn as never, options as never).catch((x: unknown) => x)) as {
          code: string;
          details: { problems: string[] };
        };
        expect(e).toMatchObject({ code: ErrorCode.INVALID_GRAPH_CONFIG });
        return e.details.problems;
      };
      expect(await problems({ configurable: {} }, 'nope', { ttlMs: 5 })).toEqual([
        'config.configurable.thread_id is missing or empty',
        'fn must be a function (the graph call to run holding the thread)',
        'options.ttlMs: must be an integer number of ms, from 100 to 2147483647 (got 5)',
      ]);
      expect(await problems({ configurable: { thread_id: 't' }, durability: 'async' }, () => 1, { ttl: 1000 })).toEqual(
        [
          `config.durability must be 'sync' or absent, got "async" (under 'async' or 'exit' LangGraph starts a node before the fenced writes are in)`,
          "unknown option 'options.ttl' (did you mean 'options.ttlMs'?)",
        ],
      );
      expect(await saver.store.getLease('t')).toBeNull();

      const State = Annotation.Root({ n: Annotation<number> });
      let ran = 0;
      const graph = new StateGraph(State)
        .addNode('one', async () => {
          await new Promise((r) => setTimeout(r, 50));
          return { n: 1 };
        })
        .addNode('two', () => ({ n: ++ran }))
        .addEdge(START, 'one')
        .addEdge('one', 'two')
        .addEdge('two', END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: 'streamed' } };
      expect(await problems(config, (held: typeof config) => graph.stream({ n: 0 }, held), {})).toEqual([
        'fn returned a stream: read it to its end inside fn (for await …), so the thread is held while the graph runs',
      ]);
      await new Promise((r) => setTimeout(r, 200));
      expect(ran, 'the cancelled stream ran no further node').toBe(0);
      expect((await saver.store.getLease('streamed'))?.holder).toBeNull();
    });
  });
});
