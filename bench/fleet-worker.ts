/**
 * One worker process of the fleet bench (bench/fleet.ts): it hosts a share of
 * the simulated laptops, each a SQLite store file of its own connected to the
 * plane as a laptop is (`connectPlane`: the outbox drain and the change feed,
 * and `serveDecisions`: the decision feed and the run requests), running
 * agents through the real runtime one run after another.
 *
 * A run: `turns` turns, each a model call (a scripted model that takes about
 * `stepMs`) with one tool call, the tool taking about `stepMs` too and then
 * charging through an `idempotent` effect; so each laptop writes about one
 * row a second. Every effect that runs is counted per (run, turn): one run
 * twice is an error the parent reports. One run in `decideEvery` pauses in
 * its first tool for a person's approval (the parent records it on the
 * plane); the laptop goes on with its next run, and its decision worker
 * (`serveDecisions` with `runs: 'mine'`: its writer's decision feed) applies
 * the decision. Each decision it applies is reported, with anything else
 * the worker said (a laptop alone on its runs never sees one applied
 * elsewhere or superseded).
 *
 * Client-side figures come from undici's diagnostics channels (the drain, the
 * plane calls and restores go through undici; the change feed's long poll
 * does not): each `POST /v1/ingest`'s time from request to its answer's end,
 * the answers by status, the network errors, and the restores asked.
 *
 * Driven over IPC by the parent (`fork`):
 *   { type: 'start', … }  → { type: 'ready' }
 *   { type: 'mark' }      → { type: 'marked', counters }   (latencies since the previous mark)
 *   { type: 'stop' }      → { type: 'done', … }            (runs finished, outboxes flushed, stores compared)
 */
import { createHash } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { z } from 'zod';
import {
  Agent,
  connectPlane,
  currentRun,
  idempotent,
  interrupt,
  type Model,
  type Replica,
  ScriptedModel,
  serveDecisions,
  tool,
} from '../client/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { randomText } from './lib/text.js';

export interface LaptopSpec {
  name: string;
  /** The project key this laptop's replica uses. */
  key: string;
  /** Its SQLite store file. */
  path: string;
}

export interface WorkerStart {
  type: 'start';
  url: string;
  laptops: LaptopSpec[];
  stepMs: number;
  turns: number;
  /** Row text size (bytes) of a model message and of a tool result. */
  textBytes: number;
  /** One run in this many pauses for a decision (0: none). */
  decideEvery: number;
}

/** What a worker counted since it started (latencies: since the previous mark). */
export interface WorkerCounters {
  ingestMs: number[];
  ingestRequests: number;
  restores: number;
  /** Answers by status, every undici request of the worker's laptops. */
  statuses: Record<string, number>;
  networkErrors: number;
  runsCompleted: number;
  runsFailed: number;
  /** Runs that paused for a decision. */
  runsPaused: number;
  /** The first few failures, said. */
  failures: string[];
}

/** A run as the store that wrote it holds it: its row count and the md5 of its row ids (sorted, comma-joined). */
export interface RunRows {
  executionId: string;
  rows: number;
  idsMd5: string;
}

export interface WorkerDone {
  type: 'done';
  counters: WorkerCounters;
  runs: RunRows[];
  effectsRun: number;
  /** Effects (run, turn) that ran more than once. */
  effectsTwice: string[];
  /** Rows still in the outboxes after the final flush, and rows the plane refused (quarantined). */
  pendingRows: number;
  quarantined: number;
  /** Replica events that say something went wrong (run_lost, quarantined, listener_error), each said. */
  replicaEvents: string[];
  /** The decisions the laptops applied, by id (each should be here once, over all workers). */
  decisionsApplied: string[];
  /** Decisions a laptop was told were applied elsewhere or superseded, each said. */
  decisionsWrong: string[];
}

const counters: WorkerCounters = {
  ingestMs: [],
  ingestRequests: 0,
  restores: 0,
  statuses: {},
  networkErrors: 0,
  runsCompleted: 0,
  runsFailed: 0,
  runsPaused: 0,
  failures: [],
};
const fail = (what: string) => {
  if (counters.failures.length < 10) counters.failures.push(what);
};

// undici's request objects: the ingest's start time by request, answers by status, restores asked
const started = new WeakMap<object, number>();
type UndiciRequest = { method: string; path: string };
subscribe('undici:request:create', (m) => {
  const { request } = m as { request: UndiciRequest };
  if (request.method === 'POST' && request.path.endsWith('/v1/ingest')) started.set(request, performance.now());
  if (request.method === 'GET' && /\/v1\/executions\/[^/]+\/restore/.test(request.path)) counters.restores++;
});
subscribe('undici:request:headers', (m) => {
  const { response } = m as { response: { statusCode: number } };
  const s = String(response.statusCode);
  counters.statuses[s] = (counters.statuses[s] ?? 0) + 1;
});
subscribe('undici:request:trailers', (m) => {
  const { request } = m as { request: UndiciRequest };
  const t0 = started.get(request);
  if (t0 === undefined) return;
  started.delete(request);
  counters.ingestRequests++;
  counters.ingestMs.push(performance.now() - t0);
});
/** Set once the parent asked to stop: the polls aborted then are this worker's doing, not errors. */
let stopping = false;
subscribe('undici:request:error', (m) => {
  const { request, error } = m as { request: UndiciRequest; error: Error };
  started.delete(request);
  if (stopping) return;
  counters.networkErrors++;
  fail(`${request.method} ${request.path}: ${error.message}`);
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** About `ms`: ±20%, so the laptops do not step in lockstep. */
const about = (ms: number) => ms * (0.8 + 0.4 * Math.random());

/** Effects run, by `<executionId>:<turn>`. */
const effects = new Map<string, number>();
/** Decisions applied, by id, in the order applied; and what a laptop alone on its runs should never see of one. */
const applied: string[] = [];
const wrongDecisions: string[] = [];

/** Whether a run (`<laptop>-r<k>`) pauses for a decision: one in `every`. */
const pausesForDecision = (executionId: string | undefined, every: number) =>
  every > 0 && Number(/-r(\d+)$/.exec(executionId ?? '')?.[1] ?? 1) % every === 0;

class Laptop {
  readonly store: SqliteCheckpointer;
  readonly replica: Replica;
  readonly runs: string[] = [];
  private readonly agent: Agent;
  private readonly serving = new AbortController();
  private served: Promise<unknown> | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  /** What the replica said that a laptop alone on its runs should never hear (its events `run_lost`, `quarantined`, `listener_error`). */
  readonly said: string[] = [];

  constructor(
    private readonly spec: LaptopSpec,
    private readonly o: WorkerStart,
  ) {
    this.store = new SqliteCheckpointer({ path: spec.path });
    this.replica = connectPlane(this.store, { url: o.url, apiKey: spec.key });
    // each laptop is alone on its runs: a run lost, a row refused, a listener failing is said
    this.replica.on('run_lost', (l) => this.said.push(`${spec.name} run_lost ${l.executionId}: ${l.reason}`));
    this.replica.on('quarantined', (q) => this.said.push(`${spec.name} quarantined ${q.ids.length}: ${q.reason}`));
    this.replica.on('listener_error', (e) => this.said.push(`${spec.name} listener_error ${e.event}`));
    const { turns, stepMs, textBytes, decideEvery } = o;
    const charge = idempotent(async function charge(turn: number) {
      const at = `${currentRun()?.executionId}:${turn}`;
      effects.set(at, (effects.get(at) ?? 0) + 1);
      return { turn, receipt: randomText(textBytes / 2, turn, 7) };
    });
    const work = tool({
      name: 'work',
      description: 'Do one piece of work',
      parameters: z.object({ turn: z.number() }),
      execute: async ({ turn }) => {
        // a person approves the work before its first charge (the run pauses here until the decision is applied)
        if (turn === 0 && pausesForDecision(currentRun()?.executionId, decideEvery))
          interrupt('approve the work', { turn });
        await sleep(about(stepMs));
        return { done: turn, charge: await charge(turn), note: randomText(textBytes / 2, turn, 2) };
      },
    });
    const script = new ScriptedModel(({ turn }) =>
      turn < turns
        ? { content: randomText(textBytes, turn, 1), toolCalls: [{ name: 'work', arguments: { turn } }] }
        : { content: 'done' },
    );
    const model: Model = {
      name: 'paced',
      async generate(request) {
        await sleep(about(stepMs));
        return script.generate(request);
      },
    };
    this.agent = new Agent({ name: 'laptop', model, tools: [work], checkpointer: this.store, maxTurns: turns + 1 });
  }

  /** Serve decisions (the decision feed and the run requests) and run runs back to back until stop(). */
  start(): void {
    const name = this.spec.name;
    this.served = serveDecisions({
      agent: this.agent,
      store: this.store,
      replica: this.replica,
      // each laptop alone on its runs: served its own decisions and run requests only
      runs: 'mine',
      signal: this.serving.signal,
      onOutcome: (x) => {
        if (x.outcome === 'applied') {
          applied.push(x.decision.decisionId);
          if (x.status !== 'completed') fail(`${x.decision.executionId} ended ${x.status} after its decision`);
        } else if (x.outcome !== 'failed')
          // alone on its runs: a decision applied elsewhere or superseded is wrong (a failed one is tried again)
          wrongDecisions.push(`${name}: decision ${x.decision.decisionId} (${x.decision.executionId}) ${x.outcome}`);
      },
    });
    this.loop = (async () => {
      // spread the laptops' first steps over a step
      await sleep(Math.random() * this.o.stepMs);
      for (let k = 0; !this.stopping; k++) {
        const executionId = `${this.spec.name}-r${k}`;
        this.runs.push(executionId);
        try {
          const r = await this.agent.run('work through the list', { executionId });
          if (r.status === 'completed') counters.runsCompleted++;
          else if (r.status === 'paused' && pausesForDecision(executionId, this.o.decideEvery)) counters.runsPaused++;
          else {
            counters.runsFailed++;
            fail(`${executionId} ended ${r.status}`);
          }
        } catch (e) {
          counters.runsFailed++;
          fail(`${executionId}: ${(e as Error).message}`);
        }
      }
    })();
  }

  /** Let the run in hand finish, flush the outbox, stop serving and the replica; what the store holds of each run. */
  async stop(): Promise<{ runs: RunRows[]; pendingRows: number; quarantined: number }> {
    this.stopping = true;
    await this.loop;
    // the decision in hand is finished before the outbox is flushed: its rows go too
    this.serving.abort();
    await this.served;
    const left = await this.replica.flush({ timeoutMs: 120_000 });
    await this.replica.stop();
    const runs: RunRows[] = [];
    for (const executionId of this.runs) {
      const ids = (await this.store.list(executionId)).map((r) => r.id).sort();
      runs.push({ executionId, rows: ids.length, idsMd5: createHash('md5').update(ids.join(',')).digest('hex') });
    }
    await this.store.close();
    return { runs, pendingRows: left.pendingRows, quarantined: left.quarantinedCount };
  }
}

let laptops: Laptop[] = [];
process.on('message', (m: { type: string } & Partial<WorkerStart>) => {
  void (async () => {
    if (m.type === 'start') {
      const o = m as WorkerStart;
      laptops = o.laptops.map((l) => new Laptop(l, o));
      for (const l of laptops) l.start();
      process.send!({ type: 'ready' });
    } else if (m.type === 'mark') {
      process.send!({ type: 'marked', counters: { ...counters, failures: [...counters.failures] } });
      counters.ingestMs = [];
    } else if (m.type === 'stop') {
      stopping = true;
      const ends = await Promise.all(laptops.map((l) => l.stop()));
      const done: WorkerDone = {
        type: 'done',
        counters,
        runs: ends.flatMap((e) => e.runs),
        effectsRun: [...effects.values()].reduce((a, n) => a + n, 0),
        effectsTwice: [...effects].filter(([, n]) => n > 1).map(([k, n]) => `${k} ×${n}`),
        pendingRows: ends.reduce((a, e) => a + e.pendingRows, 0),
        quarantined: ends.reduce((a, e) => a + e.quarantined, 0),
        replicaEvents: laptops.flatMap((l) => l.said),
        decisionsApplied: applied,
        decisionsWrong: wrongDecisions,
      };
      process.send!(done, () => process.exit(0));
    }
  })().catch((e: Error) => {
    console.error(`fleet worker ${process.pid}: ${e.stack ?? e.message}`);
    process.exit(1);
  });
});
// the parent gone (killed, crashed): nothing to report to
process.on('disconnect', () => process.exit(1));
