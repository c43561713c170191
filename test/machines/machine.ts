/**
 * One machine of the multi-machine scenarios: a real process with
 * its own SQLite store file, connected to one plane over HTTP, running the
 * charge agent. The test drives it over IPC (test/machines/fleet.ts is the
 * other half).
 *
 *   node --import tsx machine.ts '<MachineConfig as JSON>'
 *
 * The agent: a run's input is `steps N` (optionally `approve K`); at turn t < N
 * the model calls the `charge` tool once with `{ order: t }`, then answers.
 * `charge` charges a card through `idempotent(...)` (key
 * `charge:<executionId>:<order>`); each real charge appends one JSON line
 * `{ machine, executionId, order, pid, at }` to the effect ledger, a file
 * outside every store. With `approve K`, the tool of order K asks for an
 * approval (`interrupt`) before it charges.
 *
 * Fault controls, in the config (patched at any time with `{ type: 'config' }`),
 * each at a phase of a charge tool call: `enter` (the tool started, before its
 * effect) or `charged` (the effect ran and its idempotency entry is recorded
 * locally, before the tool returns):
 * - `holds`: wait there (asynchronously: the lease timer, the drain and the
 *   feeds keep running) until the test sends `{ type: 'release' }`;
 * - `sleeps`: wait there this many ms;
 * - `kills`: SIGKILL this process there (`model` kills it in its model call
 *   of that turn instead);
 * - `stops`: SIGSTOP this process there (`model`: in its model call of that
 *   turn), after reporting `{ type: 'stopping' }`; the test continues it
 *   (SIGCONT) when it chooses, and it goes on from that very point; each
 *   stop fires once per process (a run re-entering that point later, after a
 *   takeover back, is not stopped again: the test continues a process once);
 * - `without`: tools this (older) build does not have.
 * Each phase reached is reported (`{ type: 'inside', order, phase }`), with
 * every replica event (`{ type: 'event' }`) and each recovery pass.
 *
 * Commands (`{ type: 'cmd', req, cmd, id, opts }`), each answered with one
 * `{ type: 'outcome', req, ok, result | error }`:
 *   start <id>     agent.run
 *   resume <id>    agent.resume with no value (the takeover path); opts.retryWhile:
 *                  codes to retry on (every 100 ms) until opts.deadlineMs;
 *                  opts.restoreOn: codes (or plane codes) on which to restore
 *                  from the plane again before the next try
 *   approve <id>   agent.resume with { approved: true }
 *   recover        recoverRuns once, or with opts.watch until `recover-stop`
 *   restore <id>   restoreFromPlane
 *   cancel <id>    store.cancel (this store: a restored copy is connected, so the marker is drained to the plane)
 *   rows <id>      this store's rows of the run
 *   entries <id>   this store's idempotency entries of the run's charges (by order)
 *   flush          replica.flush
 *   exit           flush (bounded), stop the replica, close the store, exit 0
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import {
  Agent,
  connectPlane,
  currentEffect,
  currentRun,
  idempotent,
  interrupt,
  recoverRuns,
  type Replica,
  restoreFromPlane,
  ScriptedModel,
  tool,
  type Tool,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

export type Phase = 'enter' | 'charged';

export interface MachineConfig {
  /** Named in the ledger and in every message. */
  name: string;
  db: string;
  url: string;
  apiKey: string;
  ledger: string;
  /** The agent's lease (ms). */
  leaseMs: number;
  /** The store's writer id (default: the one persisted in the file). */
  writerId?: string;
  holds?: { order: number; phase: Phase }[];
  sleeps?: { order: number; phase: Phase; ms: number }[];
  kills?: ({ order: number; phase: Phase } | { model: number })[];
  /** Points at which this process SIGSTOPs itself (the kill campaign's stalls; the test sends SIGCONT). */
  stops?: ({ order: number; phase: Phase } | { model: number })[];
  /** Tools this build lacks (an older build). */
  without?: string[];
}

export interface LedgerLine {
  machine: string;
  executionId: string;
  order: number;
  pid: number;
  /** Date.now() when the charge ran. */
  at: number;
  /** The effect's idempotency key (`currentEffect()`), as a deduping service would receive it. */
  key?: string;
}

/** What the machine says back. */
export type MachineMessage =
  | { type: 'ready'; name: string; pid: number; writerId: string }
  | { type: 'outcome'; req: number; cmd: string; ok: true; result: unknown }
  | {
      type: 'outcome';
      req: number;
      cmd: string;
      ok: false;
      error: { code: string | null; message: string; details?: unknown };
    }
  | { type: 'inside'; executionId: string; order: number; phase: Phase | 'held'; at: number }
  | { type: 'model'; executionId: string; turn: number }
  | { type: 'event'; name: string; payload: unknown; at: number }
  | { type: 'pass'; runs: unknown[] }
  /** About to SIGSTOP itself at a `stops` point (`order` and `phase`, or the model call of `turn`). */
  | { type: 'stopping'; executionId: string; order?: number; phase?: Phase; turn?: number; at: number };

export type MachineCommand =
  | { type: 'cmd'; req: number; cmd: string; id?: string; opts?: Record<string, unknown> }
  | { type: 'config'; patch: Partial<MachineConfig> }
  | { type: 'release'; order?: number; phase?: Phase };

const config: MachineConfig = JSON.parse(process.argv[2]);
const send = (m: MachineMessage) => process.send?.(m);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const store = new SqliteCheckpointer({ path: config.db, ...(config.writerId ? { writerId: config.writerId } : {}) });
await store.setup();
const replica: Replica = connectPlane(store, {
  url: config.url,
  apiKey: config.apiKey,
  debounceMs: 10,
  pollMs: 200,
  timeoutMs: 5000,
  backoffBaseMs: 50,
  backoffCapMs: 500,
  claimFlushMs: 3000,
  changeWaitSeconds: 2,
  decisionWaitSeconds: 2,
});
// every event a replica emits, forwarded (the test asks whether a machine was told)
for (const name of [
  'run_lost',
  'run_updated',
  'run_taken_over',
  'takeover_offline',
  'claim_offline',
  'claim_refused',
  'state',
  'quarantined',
  'lease_lost',
  'run_cancelled',
  'fenced',
] as const) {
  (replica as unknown as { on(n: string, f: (p: unknown) => void): void }).on(name, (payload: unknown) => {
    try {
      send({ type: 'event', name, payload: JSON.parse(JSON.stringify(payload ?? null)), at: Date.now() });
    } catch {
      send({ type: 'event', name, payload: String(payload), at: Date.now() });
    }
  });
}

/** Report the stop (once the report is written to the channel), then SIGSTOP this process; it returns once continued. */
async function stopHere(m: Extract<MachineMessage, { type: 'stopping' }>): Promise<void> {
  await new Promise<void>((resolve) => (process.send ? process.send(m, undefined, {}, () => resolve()) : resolve()));
  process.kill(process.pid, 'SIGSTOP');
}

/** The stops that fired in this process. */
const stopped = new Set<string>();

/** Whether this process stops at `point` (one of `config.stops`), the first time only. */
function stopsAt(point: string, listed: boolean): boolean {
  if (!listed || stopped.has(point)) return false;
  stopped.add(point);
  return true;
}

/** Holds waiting for a release, by `${order}:${phase}`. */
const waiting = new Map<string, () => void>();
/** Releases that arrived before their hold was reached: the hold then passes. */
const released = new Set<string>();

async function at(executionId: string, order: number, phase: Phase): Promise<void> {
  send({ type: 'inside', executionId, order, phase, at: Date.now() });
  if (config.kills?.some((k) => 'order' in k && k.order === order && k.phase === phase))
    process.kill(process.pid, 'SIGKILL');
  if (stopsAt(`${order}:${phase}`, !!config.stops?.some((k) => 'order' in k && k.order === order && k.phase === phase)))
    await stopHere({ type: 'stopping', executionId, order, phase, at: Date.now() });
  const nap = config.sleeps?.find((s) => s.order === order && s.phase === phase);
  if (nap) await sleep(nap.ms);
  if (config.holds?.some((h) => h.order === order && h.phase === phase)) {
    const id = `${order}:${phase}`;
    if (released.has(id)) return;
    await new Promise<void>((resolve) => {
      waiting.set(id, resolve);
      send({ type: 'inside', executionId, order, phase: 'held', at: Date.now() });
    });
  }
}

const charge = idempotent(
  async (executionId: string, order: number) => {
    const line: LedgerLine = {
      machine: config.name,
      executionId,
      order,
      pid: process.pid,
      at: Date.now(),
      key: currentEffect()?.idempotencyKey,
    };
    appendFileSync(config.ledger, `${JSON.stringify(line)}\n`);
    return { chargeId: `ch_${executionId}_${order}` };
  },
  { key: (executionId, order) => `charge:${executionId}:${order}` },
);

const chargeTool = tool({
  name: 'charge',
  description: 'Charge the card for one order',
  parameters: z.object({ order: z.number().int(), approval: z.boolean() }),
  execute: async ({ order, approval }) => {
    const executionId = currentRun()!.executionId;
    await at(executionId, order, 'enter');
    if (approval && !interrupt('approval', { order }).approved) return 'declined';
    const result = await charge(executionId, order);
    await at(executionId, order, 'charged');
    return result;
  },
});

const model = new ScriptedModel(({ turn, lastUser }) => {
  const executionId = currentRun()?.executionId ?? '?';
  send({ type: 'model', executionId, turn });
  if (config.kills?.some((k) => 'model' in k && k.model === turn)) process.kill(process.pid, 'SIGKILL');
  // synchronous here (the script's rule is): the report is written to the channel before the stop in practice, and the test also watches the process state
  if (stopsAt(`model:${turn}`, !!config.stops?.some((k) => 'model' in k && k.model === turn))) {
    send({ type: 'stopping', executionId, turn, at: Date.now() });
    process.kill(process.pid, 'SIGSTOP');
  }
  const steps = Number(/steps (\d+)/.exec(lastUser)?.[1] ?? 1);
  const approveAt = Number(/approve (\d+)/.exec(lastUser)?.[1] ?? -1);
  return turn < steps
    ? { toolCalls: [{ name: 'charge', arguments: { order: turn, approval: turn === approveAt } }] }
    : { content: `charged ${steps} orders` };
});

const tools: Tool[] = [chargeTool as Tool].filter((t) => !config.without?.includes(t.name));
const agent = new Agent({ name: 'fleet-bot', model, tools, checkpointer: store, leaseMs: config.leaseMs });

const errorOf = (e: unknown) => ({
  code: (e as { code?: string }).code ?? null,
  message: (e as Error)?.message ?? String(e),
  details: JSON.parse(JSON.stringify((e as { details?: unknown }).details ?? null)),
});
const codesOf = (e: unknown) =>
  [(e as { code?: string }).code, (e as { details?: { planeCode?: string } }).details?.planeCode].filter(
    Boolean,
  ) as string[];

let recovery: AbortController | null = null;

async function run(cmd: string, id: string | undefined, opts: Record<string, unknown>): Promise<unknown> {
  switch (cmd) {
    case 'start':
      return agent.run(String(opts.input ?? 'steps 3'), { executionId: id });
    case 'approve':
      return agent.resume(id!, { approved: true });
    case 'resume': {
      const retryWhile = (opts.retryWhile as string[] | undefined) ?? [];
      const restoreOn = (opts.restoreOn as string[] | undefined) ?? [];
      const deadline = Date.now() + Number(opts.deadlineMs ?? 0);
      const refusals: string[] = [];
      for (;;) {
        try {
          const result = await agent.resume(id!);
          return { ...result, refusals };
        } catch (e) {
          const codes = codesOf(e);
          if (Date.now() > deadline || !codes.some((c) => retryWhile.includes(c) || restoreOn.includes(c))) {
            Object.assign(e as object, { refusals });
            throw e;
          }
          if (refusals.at(-1) !== codes[0]) refusals.push(codes[0]);
          if (codes.some((c) => restoreOn.includes(c)))
            await restoreFromPlane(store, id!, { url: config.url, apiKey: config.apiKey });
          await sleep(100);
        }
      }
    }
    case 'recover': {
      const strip = (runs: unknown[]) =>
        runs.map((r) => ({ ...(r as object), result: (r as { result?: { status?: string } }).result?.status }));
      if (!opts.watch) return { runs: strip((await recoverRuns({ agents: [agent], store, concurrency: 1 })).runs) };
      recovery = new AbortController();
      const report = await recoverRuns({
        agents: [agent],
        store,
        concurrency: 1,
        watch: true,
        intervalMs: Number(opts.intervalMs ?? 300),
        signal: recovery.signal,
        onPass: (r) => send({ type: 'pass', runs: strip(r.runs) }),
      });
      return { passes: report.passes, recovered: report.recovered, held: report.held, failed: report.failed };
    }
    case 'recover-stop':
      recovery?.abort();
      return null;
    case 'restore': {
      const r = await restoreFromPlane(store, id!, { url: config.url, apiKey: config.apiKey });
      return JSON.parse(JSON.stringify(r));
    }
    case 'cancel': {
      const r = await store.cancel(id!, { reason: String(opts.reason ?? 'cancelled from another machine') });
      return { seq: r.checkpoint.seq, alreadyCancelled: r.alreadyCancelled, closedPause: r.closedPause !== null };
    }
    case 'rows':
      return (await store.list(id!, { limit: 10_000 })).map((r) => ({
        seq: r.seq,
        nodeId: r.nodeId,
        step: r.step,
        status: r.status,
        writerId: r.writerId,
      }));
    case 'entries': {
      const out: Record<number, unknown> = {};
      for (let order = 0; order < Number(opts.orders ?? 16); order++) {
        const e = await store.getIdempotent(id!, `charge:${id}:${order}`);
        if (e.hit) out[order] = e.result;
      }
      return out;
    }
    case 'flush':
      return replica.flush({ timeoutMs: Number(opts.timeoutMs ?? 10_000) });
    case 'exit':
      await replica.flush({ timeoutMs: Number(opts.timeoutMs ?? 3000) }).catch(() => {});
      await replica.stop();
      await store.close();
      send({ type: 'outcome', req: Number(opts.req ?? -1), cmd, ok: true, result: null });
      process.exit(0);
  }
  throw new Error(`unknown command ${cmd}`);
}

process.on('message', (m: MachineCommand) => {
  if (m.type === 'config') Object.assign(config, m.patch);
  else if (m.type === 'release') {
    let matched = false;
    for (const [id, resolve] of waiting) {
      const [order, phase] = id.split(':');
      if ((m.order === undefined || Number(order) === m.order) && (m.phase === undefined || phase === m.phase)) {
        waiting.delete(id);
        matched = true;
        resolve();
      }
    }
    // a release sent before its hold is reached (one process stopped, say) lets that hold pass
    if (!matched && m.order !== undefined && m.phase !== undefined) released.add(`${m.order}:${m.phase}`);
  } else if (m.type === 'cmd') {
    run(m.cmd, m.id, { ...m.opts, req: m.req }).then(
      (result) =>
        send({ type: 'outcome', req: m.req, cmd: m.cmd, ok: true, result: JSON.parse(JSON.stringify(result ?? null)) }),
      (e) =>
        send({
          type: 'outcome',
          req: m.req,
          cmd: m.cmd,
          ok: false,
          error: {
            ...errorOf(e),
            ...((e as { refusals?: string[] }).refusals ? { refusals: (e as { refusals: string[] }).refusals } : {}),
          },
        }),
    );
  }
});
send({ type: 'ready', name: config.name, pid: process.pid, writerId: store.writerId });
