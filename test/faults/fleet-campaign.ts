/**
 * The cross-machine kill campaign: the kill campaign's cross-machine shape. Each trial, on one plane (test/machines/
 * fleet.ts: a real plane over HTTP, PGlite or Postgres):
 *
 * - two or three machines (test/machines/machine.ts: each a real process with
 *   its own SQLite store, connected to the plane, charging through
 *   `idempotent` into an effect ledger file outside every store);
 * - one run of 3 to 6 steps on machine `a`, each step one charge;
 * - the other machines run `recoverRuns` in watch mode (a short interval) from
 *   the start; some restore the run ahead of time (once the runner entered a
 *   chosen order, before the fault), the others restore it after the fault;
 * - faults, drawn by a PRNG from the trial's seed: the runner SIGKILLed, or
 *   SIGSTOPped for longer than its lease and then SIGCONTed, at a tool's
 *   entry or after its charge, in a model call, or at a random time; at times
 *   a second fault hits whoever runs the run next; a killed machine is at
 *   times restarted on its own store file (and always when none is left), and
 *   every machine whose own run ended joins the recoverers.
 *
 * After each trial (the run given RUN_MS to complete on the plane, then every
 * stopped machine continued, every command settled and every machine
 * exited), the invariants:
 *
 * - **double effects**: the ledger stands for a payment service that dedupes
 *   by the effect's idempotency key (`currentEffect()`), the way DESIGN.md
 *   §5b closes what no store can. Each repeated attempt is told from the
 *   trace (DoubleKind): `window`, a machine stalled after its last check and
 *   before the effect; `unsent`, the first charge's record had not reached
 *   the plane when the run was charged again (its machine died after the
 *   effect, before the record's send was answered); `broken`, neither: the
 *   plane had the record. A `broken` repeat is a double effect, and so is an
 *   order charged under two keys or none (the service could not dedupe it);
 *   the other repeats are counted and printed, the service answering them;
 * - **missing effects**: a completed run charged every order at least once;
 * - **stranded**: the run completed on the plane within RUN_MS;
 * - **unfinished**: nothing of a completed run is left unfinished: the
 *   plane's history is one branch, seqs 0..n, ending in its one run-end
 *   marker, with no holes; and every machine still up that holds a copy of
 *   the run sees it finished (its change feed caught up), so no recoverer
 *   keeps picking the run up.
 *
 * Every trial has a seed, printed with its outcome; `planTrial(seed)` is the
 * whole plan (timing between processes is not replayed, the plan is). A trial
 * with a violation carries its event log, in time order, in ms since the run
 * started: every fault and restore; every machine's tool phases, model calls,
 * replica events, recovery passes (when their outcome changes), command
 * outcomes and charges; the calls it made to the plane that decide ownership
 * (each machine reaches the plane through its own tracing proxy: lease
 * checks, takeovers, claims, cancels, the drain's batches, with when they
 * were answered); and what the plane received (its rows, events, refusals and
 * takeovers, read from its tables).
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { and, eq } from 'drizzle-orm';
import { checkpoints, events, idempotency, quarantine, runTakeovers } from '../../plane/db/schema.js';
import { LEASE_MS, openFleet, type Backend, type Fleet, type Machine, type Outcome } from '../machines/fleet.js';
import type { LedgerLine, MachineConfig, MachineMessage, Phase } from '../machines/machine.js';
import { rng } from './campaign.js';

/** How long a trial's run may take to complete on the plane, from its start. */
export const RUN_MS = 30_000;
/** How long a machine still up may take to see the completed run in its own store (its change feed). */
export const CATCH_UP_MS = 10_000;
/** How long each settling step after the run may take (a machine's run, the recoverers' last passes, the restores). */
export const SETTLE_MS = 15_000;
/** A charge made more than this long after its machine was continued is not taken for a stall after the check. */
export const RESIDUAL_MS = 1_000;

export type Trigger =
  /** In the charge tool of `order`, at `phase` (the machine SIGKILLs or SIGSTOPs itself there). */
  | { at: 'tool'; order: number; phase: Phase }
  /** In the model call of `turn` (turn `steps` is the final answer). */
  | { at: 'model'; turn: number }
  /**
   * From the test: `afterMs` after the runner's model call of turn `turn` (the first fault: anywhere in that
   * step, its check, its charge and its drain included), or after the first fault ended (a second one).
   */
  | { at: 'timed'; afterMs: number; turn?: number };

export interface PlannedFault {
  /** A machine (`a`, `b`, `c`), or `runner`: whichever machine was last seen running the run when the fault fires. */
  target: string;
  kind: 'kill' | 'stop';
  trigger: Trigger;
  /** A stop: how long the machine stays stopped (always longer than its lease). */
  stopMs: number;
  /** A kill: the machine is started again on its own store file this long after (null: only if no machine is left). */
  restartAfterMs: number | null;
}

export interface TrialPlan {
  seed: number;
  machines: string[];
  steps: number;
  /** Each machine's recoverRuns watch interval. */
  intervalMs: Record<string, number>;
  /** Machines that restore the run ahead of time: once the runner entered this order (or the first fault fired, if sooner). */
  ahead: Record<string, number>;
  /** Machines that restore the run after the first fault fired: this long after. */
  late: Record<string, number>;
  faults: PlannedFault[];
}

/** The whole plan of a trial, from its seed alone. */
export function planTrial(seed: number): TrialPlan {
  const r = rng(seed);
  const machines = ['a', 'b', 'c'].slice(0, r() < 0.5 ? 2 : 3);
  const steps = 3 + Math.floor(r() * 4);
  const point = (): Trigger =>
    r() < 0.7
      ? { at: 'tool', order: Math.floor(r() * steps), phase: r() < 0.5 ? 'enter' : 'charged' }
      : { at: 'model', turn: Math.floor(r() * (steps + 1)) };
  const fault = (target: string, trigger: Trigger): PlannedFault => ({
    target,
    kind: r() < 0.5 ? 'kill' : 'stop',
    trigger,
    stopMs: LEASE_MS + 300 + Math.floor(r() * 4200),
    restartAfterMs: r() < 0.35 ? Math.floor(r() * 3000) : null,
  });
  const first = fault(
    'a',
    r() < 0.6 ? point() : { at: 'timed', turn: Math.floor(r() * steps), afterMs: Math.floor(r() * 400) },
  );
  const faults = [first];
  if (r() < 0.4) {
    // a point on one other machine (it fires if that machine runs the run there), or whoever runs it at a random time
    const other = machines[1 + Math.floor(r() * (machines.length - 1))];
    faults.push(r() < 0.5 ? fault(other, point()) : fault('runner', { at: 'timed', afterMs: Math.floor(r() * 3000) }));
  }
  const faultOrder = first.trigger.at === 'tool' ? first.trigger.order : Math.min(first.trigger.turn ?? 0, steps - 1);
  const intervalMs: Record<string, number> = {};
  const ahead: Record<string, number> = {};
  const late: Record<string, number> = {};
  for (const m of machines) intervalMs[m] = 200 + Math.floor(r() * 300);
  for (const m of machines.slice(1)) {
    if (r() < 0.6) ahead[m] = Math.floor(r() * (faultOrder + 1));
    else late[m] = Math.floor(r() * 1500);
  }
  return { seed, machines, steps, intervalMs, ahead, late, faults };
}

export const describeTrigger = (t: Trigger) =>
  t.at === 'tool'
    ? `tool ${t.order} ${t.phase}`
    : t.at === 'model'
      ? `model turn ${t.turn}`
      : t.turn !== undefined
        ? `+${t.afterMs} ms after model turn ${t.turn}`
        : `+${t.afterMs} ms`;
export const describePlan = (p: TrialPlan) =>
  [
    `${p.machines.length} machines, ${p.steps} steps`,
    ...p.faults.map(
      (f) =>
        `${f.kind} ${f.target} at ${describeTrigger(f.trigger)}${f.kind === 'stop' ? ` for ${f.stopMs} ms` : f.restartAfterMs !== null ? `, restarted after ${f.restartAfterMs} ms` : ''}`,
    ),
    ...Object.entries(p.ahead).map(([m, o]) => `${m} restores ahead (order ${o})`),
    ...Object.entries(p.late).map(([m, ms]) => `${m} restores ${ms} ms after the fault`),
  ].join('; ');

/**
 * Why an order was charged again:
 * - `broken`: after the plane had received the first charge's record, with no stall to explain it (§5b's promise broken);
 * - `unsent`: the first charge's record had not reached the plane before the repeat (its machine was killed or
 *   stopped after the effect, before its drain sent the record; or the record arrived only later, refused);
 * - `window`: the repeating machine stalled after its last check, before the effect (the window §5b accepts,
 *   shown by its traced lease check, answered before the stop).
 */
export type DoubleKind = 'broken' | 'unsent' | 'window';

export interface FleetTrialResult {
  seed: number;
  executionId: string;
  plan: TrialPlan;
  ok: boolean;
  ms: number;
  /** Charges beyond the first of an order. */
  doubles: number;
  /** Those charges by cause (see DoubleKind). */
  doubleKinds: Record<DoubleKind, number>;
  /** Orders of a completed run never charged. */
  missing: number;
  stranded: boolean;
  /** What was left unfinished (empty: nothing). */
  unfinished: string[];
  /** When the run completed on the plane (ms after it started), or null. */
  completedAfter: number | null;
  /** Every invariant broken, in words. */
  violations: string[];
  /** The faults that fired, in order ("stop a at tool 2 charged"). */
  fired: string[];
  restarts: number;
  /** Takeovers the plane recorded for the run. */
  takeovers: number;
  /** Observations that are not violations (a recovery pass that failed, a double charge that fits the accepted window). */
  notes: string[];
  log: string[];
  ledger: LedgerLine[];
}

/** One call a machine made to the plane, as its tracing proxy saw it (times of the test process). */
export interface TracedCall {
  method: string;
  path: string;
  sentAt: number;
  answeredAt: number | null;
  status: number | null;
  /** The plane's error code, when it answered one. */
  code: string | null;
}

/**
 * A pass-through proxy in front of the plane, one per machine: every call the
 * machine makes to the plane reaches it unchanged, and the calls that decide
 * ownership (lease renewals, takeovers, claims, cancels) and the drain's
 * batches are reported with when they were forwarded and answered. An answer
 * written to a machine that is stopped waits in its socket: the trace shows
 * whether a check was answered before the stop.
 */
export class TraceProxy {
  /** Every proxy started and not closed yet (a trial that threw leaves its own: the campaign closes them). */
  static readonly open = new Set<TraceProxy>();
  static async closeAll(): Promise<void> {
    await Promise.all([...TraceProxy.open].map((p) => p.close()));
  }
  url = '';
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  constructor(
    private readonly target: string,
    private readonly onCall: (c: TracedCall) => void,
  ) {}

  async start(): Promise<this> {
    const target = new URL(this.target);
    this.server = createServer((req, res) => {
      const path = req.url ?? '';
      const traced = /\/(lease|takeover|claim|cancel|ingest)(\/|\?|$)/.test(path);
      const call: TracedCall = {
        method: req.method ?? '',
        path,
        sentAt: Date.now(),
        answeredAt: null,
        status: null,
        code: null,
      };
      const up = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => {
            if (traced && chunks.length < 8) chunks.push(c);
            res.write(c);
          });
          answer.on('end', () => {
            res.end();
            if (!traced) return;
            call.answeredAt = Date.now();
            call.status = answer.statusCode ?? null;
            try {
              call.code =
                (JSON.parse(Buffer.concat(chunks).toString()) as { error?: { code?: string } }).error?.code ?? null;
            } catch {
              /* a compressed or empty answer */
            }
            this.onCall(call);
          });
          answer.on('error', () => res.destroy());
        },
      );
      up.on('error', () => {
        res.destroy();
        if (traced) this.onCall(call);
      });
      req.pipe(up);
    });
    this.server.on('connection', (sock) => {
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    TraceProxy.open.add(this);
    return this;
  }

  async close(): Promise<void> {
    TraceProxy.open.delete(this);
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The machine's change feed reported its copy of a run diverged from the plane's (a loser's own rows past the fence). */
const divergedCopy = (s: { m: Machine }) =>
  s.m.messages.some(
    (x) =>
      x.type === 'event' && x.name === 'run_updated' && (x.payload as { outcome?: string })?.outcome === 'diverged',
  );

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Poll `check` every 10 ms until it holds. */
const until = async (check: () => boolean) => {
  while (!check()) await sleep(10);
};

/** The process state letter of /proc/<pid>/stat ('T': stopped), or null once it is gone. */
function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/** Bound a promise: its value, or `fallback` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  clearTimeout(timer);
  return r;
}

interface Seat {
  /** a, b or c. */
  name: string;
  m: Machine;
  /** Started again after a kill (on the same store file). */
  generation: number;
  watch: Promise<Outcome> | null;
  stoppedAt: number | null;
  continuedAt: number[];
  /** Each stop: when it stopped (its own report where it stopped itself) and when it was continued. */
  stops: { at: number; cont: number | null }[];
  /** The SIGCONT of its current stop, pending. */
  cont: Promise<void> | null;
  /** Its watch's last logged pass summary (a pass is logged when it differs). */
  lastPass: string;
}

/** One trial on an open fleet. */
export async function runFleetTrial(fleet: Fleet, seed: number): Promise<FleetTrialResult> {
  const plan = planTrial(seed);
  const id = `fleet-${seed}`;
  /** [when (ms since the epoch: a machine's own clock where it says, else when the test heard it), who, what] */
  const entries: [number, string, string][] = [];
  const fired: string[] = [];
  const notes: string[] = [];
  const violations: string[] = [];
  let t0 = Date.now();
  const note = (who: string, what: string, at = Date.now()) => entries.push([at, who, what]);
  const seats = new Map<string, Seat>();
  /** Every machine of the trial, restarted ones included. */
  const allSeats: Seat[] = [];
  const pending: Promise<unknown>[] = [];
  let restarts = 0;
  /** The machine last seen running the run (a tool phase or a model call of it). */
  let runner = 'a';
  let done = false;

  // each machine reaches the plane through its own tracing proxy (a restarted one through the same)
  const proxies = new Map<string, TraceProxy>();
  /** The plane calls each machine made, as traced. */
  const calls = new Map<string, TracedCall[]>(plan.machines.map((n) => [n, []]));
  for (const n of plan.machines) {
    const short = (p: string) => p.replace(`/v1/executions/${encodeURIComponent(id)}`, '…').replace(/\?.*$/, '');
    proxies.set(
      n,
      await new TraceProxy(fleet.url, (c) => {
        calls.get(n)!.push(c);
        const answer =
          c.answeredAt === null
            ? 'no answer'
            : `${c.status}${c.code ? ` ${c.code}` : ''}, answered +${c.answeredAt - t0} ms`;
        note(n, `→ plane ${c.method} ${short(c.path)} (forwarded +${c.sentAt - t0} ms): ${answer}`, c.sentAt);
      }).start(),
    );
  }
  const configFor = (name: string, generation: number): Partial<MachineConfig> => {
    if (generation > 0) return { url: proxies.get(name)!.url };
    const kills: MachineConfig['kills'] = [];
    const stops: MachineConfig['stops'] = [];
    for (const f of plan.faults) {
      if (f.target !== name || f.trigger.at === 'timed') continue;
      const p =
        f.trigger.at === 'tool' ? { order: f.trigger.order, phase: f.trigger.phase } : { model: f.trigger.turn };
      (f.kind === 'kill' ? kills : stops).push(p);
    }
    return { url: proxies.get(name)!.url, kills, stops };
  };

  const firedFaults = new Set<PlannedFault>();
  /** Machines being started again (never two processes on one store file). */
  const restarting = new Set<string>();
  const faultOf = (name: string, point: string) =>
    plan.faults.find((f) => f.target === name && f.trigger.at !== 'timed' && describeTrigger(f.trigger) === point);

  const watchOn = (seat: Seat) => {
    if (seat.watch || done || !seat.m.alive()) return;
    note(seat.name, `recoverRuns watch (every ${plan.intervalMs[seat.name]} ms)`);
    seat.watch = seat.m.command(
      'recover',
      undefined,
      { watch: true, intervalMs: plan.intervalMs[seat.name] },
      10 * 60_000,
    );
    pending.push(seat.watch.then((out) => note(seat.name, `watch ended: ${brief(out)}`)));
  };

  /** Continue a stopped seat after `ms`; the promise settles once it is continued. */
  const continueAfter = (seat: Seat, ms: number) => {
    seat.cont = sleep(ms).then(() => {
      // read before the signal: the machine may act on it before this process reads the clock again
      const at = Date.now();
      seat.m.signal('SIGCONT');
      seat.continuedAt.push(at);
      const last = seat.stops.at(-1);
      if (last) last.cont = at;
      seat.stoppedAt = null;
      seat.cont = null;
      note(seat.name, `SIGCONT (stopped ${ms} ms)`, at);
    });
    pending.push(seat.cont);
    return seat.cont;
  };

  let firstFaultEnded: () => void = () => {};
  const firstFaultEnd = new Promise<void>((r) => (firstFaultEnded = r));
  let firstFaultFired: () => void = () => {};
  const firstFaultFire = new Promise<void>((r) => (firstFaultFired = r));
  const firstFault = plan.faults[0];

  /** A fault fired on `seat` (by the seat itself at a point, or by the test). */
  const onFault = (seat: Seat, f: PlannedFault, how: string, at?: number) => {
    if (firedFaults.has(f)) return;
    firedFaults.add(f);
    fired.push(`${f.kind} ${seat.name} at ${how}`);
    const isFirst = f === firstFault;
    if (isFirst) firstFaultFired();
    if (f.kind === 'stop') {
      seat.stoppedAt = Date.now();
      seat.stops.push({ at: at ?? seat.stoppedAt, cont: null });
      note(seat.name, `SIGSTOP at ${how}`);
      const c = continueAfter(seat, f.stopMs);
      if (isFirst) void c.then(firstFaultEnded);
    } else {
      note(seat.name, `SIGKILL at ${how}`);
      if (isFirst) firstFaultEnded();
      if (f.restartAfterMs !== null) pending.push(restart(seat, f.restartAfterMs));
    }
  };

  const restart = async (seat: Seat, afterMs: number) => {
    if (restarting.has(seat.name)) return;
    restarting.add(seat.name);
    try {
      await seat.m.exited;
      await sleep(afterMs);
      if (done || seats.get(seat.name) !== seat) return;
      restarts++;
      note(seat.name, `restarting on its store file (${afterMs} ms after the kill)`);
      const m = await fleet.machine(`${id}-${seat.name}`, {
        db: seat.m.db,
        ...configFor(seat.name, seat.generation + 1),
      });
      const fresh: Seat = {
        name: seat.name,
        m,
        generation: seat.generation + 1,
        watch: null,
        stoppedAt: null,
        continuedAt: [],
        stops: [],
        cont: null,
        lastPass: '',
      };
      seats.set(seat.name, fresh);
      allSeats.push(fresh);
      attach(fresh);
      note(seat.name, `restarted (pid ${m.pid})`);
      watchOn(fresh);
    } finally {
      restarting.delete(seat.name);
    }
  };

  const attach = (seat: Seat) => {
    const { m } = seat;
    m.child.on('message', (msg: MachineMessage) => {
      switch (msg.type) {
        case 'inside':
          if (msg.executionId === id) runner = seat.name;
          note(seat.name, `tool ${msg.order} ${msg.phase}`, msg.at);
          break;
        case 'model':
          if (msg.executionId === id) runner = seat.name;
          note(seat.name, `model turn ${msg.turn}`);
          break;
        case 'event':
          // the drain's state changes are many and say little here
          if (msg.name === 'state') break;
          note(seat.name, `event ${msg.name} ${JSON.stringify(msg.payload).slice(0, 240)}`, msg.at);
          break;
        case 'pass': {
          const mine = (msg.runs as Record<string, unknown>[]).filter((r) => r.executionId === id);
          const s =
            mine
              .map((r) =>
                [r.outcome, r.reason, r.result ?? r.status, (r.error as { code?: string } | undefined)?.code]
                  .filter(Boolean)
                  .join(' '),
              )
              .join(', ') || 'nothing to recover';
          for (const r of mine)
            if (r.outcome === 'failed')
              notes.push(`${seat.name}: recovery pass failed: ${JSON.stringify(r.error).slice(0, 300)}`);
          if (s !== seat.lastPass) note(seat.name, `pass: ${s}`);
          seat.lastPass = s;
          break;
        }
        case 'outcome':
          if (msg.cmd !== 'rows')
            note(
              seat.name,
              `${msg.cmd} → ${msg.ok ? `ok ${JSON.stringify(msg.result).slice(0, 160)}` : `error ${msg.error.code}: ${msg.error.message.slice(0, 200)}`}`,
            );
          break;
        case 'stopping': {
          note(
            seat.name,
            `stopping itself at ${msg.turn !== undefined ? `model turn ${msg.turn}` : `tool ${msg.order} ${msg.phase}`}`,
            msg.at,
          );
          const how = msg.turn !== undefined ? `model turn ${msg.turn}` : `tool ${msg.order} ${msg.phase}`;
          const f = faultOf(seat.name, how);
          if (f && seat.stoppedAt === null) onFault(seat, f, how, msg.at);
          break;
        }
      }
    });
    void m.exited.then(([code, signal]) => {
      note(seat.name, `exited (${signal ?? code})`);
      // killed at one of its own points: the fault that fired
      if (!done && signal === 'SIGKILL' && !seat.m.messages.some((x) => x.type === 'outcome' && x.cmd === 'exit')) {
        const last = [...seat.m.messages]
          .reverse()
          .find((x) => (x.type === 'inside' && x.phase !== 'held') || x.type === 'model');
        const how = !last
          ? ''
          : last.type === 'model'
            ? `model turn ${last.turn}`
            : last.type === 'inside'
              ? `tool ${last.order} ${last.phase}`
              : '';
        const f = faultOf(seat.name, how);
        if (f && f.kind === 'kill' && !killedByTest.has(seat.m)) onFault(seat, f, how);
      }
    });
  };
  const killedByTest = new Set<Machine>();

  // the machines, then the run
  const started = Date.now();
  const ms = await Promise.all(plan.machines.map((n) => fleet.machine(`${id}-${n}`, configFor(n, 0))));
  plan.machines.forEach((n, i) => {
    const seat: Seat = {
      name: n,
      m: ms[i],
      generation: 0,
      watch: null,
      stoppedAt: null,
      continuedAt: [],
      stops: [],
      cont: null,
      lastPass: '',
    };
    seats.set(n, seat);
    allSeats.push(seat);
    attach(seat);
  });
  t0 = Date.now();
  note(
    'test',
    `seed ${seed}: ${describePlan(plan)}; machines up in ${t0 - started} ms (${plan.machines.map((n) => `${n} pid ${seats.get(n)!.m.pid} writer ${seats.get(n)!.m.writerId}`).join(', ')})`,
  );

  // a stop the seat made itself whose report was lost: seen in /proc (state T) instead
  const stopWatcher = (async () => {
    while (!done) {
      for (const seat of seats.values()) {
        const justContinued = (seat.continuedAt.at(-1) ?? 0) > Date.now() - 500;
        if (seat.stoppedAt === null && !justContinued && seat.m.alive() && procState(seat.m.pid) === 'T') {
          const own = plan.faults.find(
            (f) => f.target === seat.name && f.kind === 'stop' && f.trigger.at !== 'timed' && !firedFaults.has(f),
          );
          if (own && seat.generation === 0) onFault(seat, own, `${describeTrigger(own.trigger)} (seen stopped)`);
        }
      }
      await sleep(50);
    }
  })();

  const a = seats.get('a')!;
  const run = a.m.command('start', id, { input: `steps ${plan.steps}` }, 10 * 60_000);
  note('a', `start ${id} (steps ${plan.steps})`);
  // the runner joins the recoverers once its own run ended (failed, lost, or finished)
  pending.push(
    run.then((out) => {
      note('a', `run ended: ${brief(out)}`);
      const seat = seats.get('a')!;
      if (seat.m === a.m) watchOn(seat);
    }),
  );
  for (const n of plan.machines.slice(1)) watchOn(seats.get(n)!);

  // timed faults
  const timed = async (f: PlannedFault, isFirst: boolean) => {
    if (f.trigger.at !== 'timed') return;
    const turn = f.trigger.turn;
    if (turn !== undefined)
      await until(
        () =>
          done ||
          a.m.messages.some((x) => x.type === 'model' && x.executionId === id && x.turn >= turn) ||
          !a.m.alive(),
      );
    await sleep(f.trigger.afterMs);
    if (done) return;
    const name = f.target === 'runner' ? runner : f.target;
    const seat = seats.get(name)!;
    if (!seat.m.alive() || seat.stoppedAt !== null) {
      note('test', `timed ${f.kind} of ${name}: not running now, skipped`);
      if (isFirst) {
        firstFaultFired();
        firstFaultEnded();
      }
      return;
    }
    if (f.kind === 'kill') {
      killedByTest.add(seat.m);
      seat.m.signal('SIGKILL');
    } else seat.m.signal('SIGSTOP');
    onFault(seat, f, isFirst ? describeTrigger(f.trigger) : `+${f.trigger.afterMs} ms after the first fault`);
  };
  if (firstFault.trigger.at === 'timed') pending.push(timed(firstFault, true));
  for (const f of plan.faults.slice(1))
    if (f.trigger.at === 'timed') pending.push(firstFaultEnd.then(() => timed(f, false)));

  // restores ahead of the fault, and after it
  const restore = async (name: string, why: string) => {
    const seat = seats.get(name)!;
    for (const t = Date.now(); Date.now() - t < 15_000 && !done; ) {
      if (!seat.m.alive()) return;
      note(name, `restore (${why})`);
      const out = await seat.m.command('restore', id, {}, 30_000);
      // not on the plane yet (its first rows on their way): again
      if (out.ok || out.died || !['EXECUTION_NOT_FOUND', 'NOT_ON_PLANE'].includes(out.error?.code ?? '')) return;
      await sleep(200);
    }
  };
  for (const [name, order] of Object.entries(plan.ahead)) {
    const entered = new Promise<void>((resolve) => {
      const check = () => a.m.messages.some((x) => x.type === 'inside' && x.executionId === id && x.order >= order);
      const timer = setInterval(() => {
        if (check() || !a.m.alive()) {
          clearInterval(timer);
          resolve();
        }
      }, 10);
    });
    pending.push(Promise.race([entered, firstFaultFire]).then(() => restore(name, `ahead, order ${order}`)));
  }
  for (const [name, afterMs] of Object.entries(plan.late))
    pending.push(firstFaultFire.then(() => sleep(afterMs)).then(() => restore(name, `${afterMs} ms after the fault`)));

  // nobody left, or the runner died before any row of the run reached the plane (no other machine can have it):
  // the first dead machine, or the runner, is started again
  const lastResort = (async () => {
    while (!done) {
      const all = [...seats.values()];
      const runnerSeat = seats.get('a')!;
      if (all.every((s) => !s.m.alive()) && restarting.size === 0) {
        note('test', `no machine left: restarting ${all[0].name}`);
        await restart(all[0], 0);
      } else if (
        !runnerSeat.m.alive() &&
        !restarting.has('a') &&
        (await fleet.execution(id).catch(() => ({}))) === null &&
        !runnerSeat.m.alive() &&
        !done
      ) {
        note('test', 'a died before any row of the run reached the plane: restarting a');
        await restart(runnerSeat, 0);
      }
      await sleep(100);
    }
  })();

  // the run completes on the plane, or RUN_MS pass
  let completed = false;
  let completedAfter: number | null = null;
  let status = 'absent';
  for (const t = Date.now(); Date.now() - t < RUN_MS; ) {
    status = (await fleet.execution(id).catch(() => null))?.execution?.status ?? 'absent';
    if (status === 'completed') {
      completed = true;
      completedAfter = Date.now() - t0;
      break;
    }
    await sleep(200);
  }
  note(
    'test',
    completed
      ? 'the run is completed on the plane'
      : `the run is not completed on the plane after ${RUN_MS} ms (${status})`,
  );

  // settle: every stopped machine continued (and given its run's end), the copies caught up, the watches stopped, every machine exited
  /** A settling step that did not end in time: said in the notes (a machine that hangs is worth a look). */
  const bounded = async <T>(what: string, p: Promise<T>, ms: number) => {
    const r = await within(
      p.then((v) => ({ v })),
      ms,
      null,
    );
    if (!r) notes.push(`settling: ${what} did not end within ${ms} ms`);
  };
  await Promise.all([...seats.values()].map((s) => s.cont));
  await bounded("a's run", run, SETTLE_MS);
  if (completed) {
    const planeLast = (await fleet.rows(id)).at(-1)?.seq ?? -1;
    await Promise.all(
      [...seats.values()].map(async (s) => {
        let last = 'no copy';
        for (const t = Date.now(); Date.now() - t < CATCH_UP_MS && s.m.alive(); ) {
          const rows = await s.m.command('rows', id, {}, 10_000);
          const rs = (rows.ok ? rows.result : []) as { seq: number; step: string; status: string; writerId: string }[];
          const end = rs.at(-1);
          last = end ? `seq ${end.seq} ${end.step} ${end.status}` : 'no copy';
          if (!end || (end.step === 'run_end' && end.seq === planeLast) || divergedCopy(s)) break;
          await sleep(200);
        }
        if (!s.m.alive() || last === 'no copy' || last === `seq ${planeLast} run_end completed`) return;
        // a loser's copy that ran on past the plane's fence keeps its own rows: the plane's verdict stands (§5b), and its feed says so
        if (divergedCopy(s))
          notes.push(`machine ${s.name}'s copy stays at ${last}: diverged from the plane's (seq ${planeLast})`);
        else
          violations.push(
            `unfinished: machine ${s.name}'s copy is at ${last} ${CATCH_UP_MS} ms after the run completed on the plane (at seq ${planeLast})`,
          );
      }),
    );
  }
  done = true;
  await Promise.all([stopWatcher, lastResort]);
  for (const s of seats.values()) if (s.m.alive() && s.watch) void s.m.command('recover-stop', undefined, {}, 10_000);
  await bounded('the recoverers', Promise.all([...seats.values()].map((s) => s.watch)), SETTLE_MS);
  await bounded('the restores and restarts', Promise.allSettled(pending), SETTLE_MS);
  await Promise.all(allSeats.map((s) => s.m.exit()));
  await Promise.all([...proxies.values()].map((p) => p.close()));
  const ms_ = Date.now() - started;

  // the invariants
  const ledger = fleet.ledger(id);
  const per = new Array<number>(plan.steps).fill(0);
  for (const l of ledger) per[l.order] = (per[l.order] ?? 0) + 1;
  const attempts = per.reduce((n, c) => n + Math.max(0, c - 1), 0);
  // what the service sees: the ledger stands for a payment service that dedupes by the effect's key (currentEffect()),
  // as DESIGN §5b closes the windows no store can; an order charged under two keys, or without one, it cannot dedupe
  const keyless = per.reduce((n, _c, order) => {
    const keys = ledger.filter((l) => l.order === order).map((l) => l.key ?? '');
    return n + (keys.some((k) => !k) || new Set(keys).size > 1 ? 1 : 0);
  }, 0);
  const missing = completed ? per.filter((c) => c === 0).length : 0;
  const plane = await planeTimeline(fleet, id);
  const doubleKinds: Record<DoubleKind, number> = { broken: 0, unsent: 0, window: 0 };
  if (attempts) {
    for (const [order, c] of per.entries()) {
      if (c < 2) continue;
      const lines = ledger.filter((l) => l.order === order).sort((x, y) => x.at - y.at);
      for (const l of lines.slice(1)) {
        const why = repeated(lines[0], l);
        doubleKinds[why.kind]++;
        notes.push(
          `order ${order} charged by ${machineOf(lines[0])} at +${lines[0].at - t0} ms and again by ${machineOf(l)} at +${l.at - t0} ms: ${why.text}`,
        );
      }
    }
  }
  // a repeat whose first record the plane held is the library's own failure, whatever a service would dedupe
  const doubles = doubleKinds.broken + keyless;
  if (doubles)
    violations.push(
      `double effects: charges per order ${JSON.stringify(per)} (${doubleKinds.broken} repeated though the plane held the record, ${keyless} order(s) a service could not dedupe)`,
    );
  else if (attempts)
    notes.push(`repeated attempts deduped by the service (one key each): charges per order ${JSON.stringify(per)}`);
  if (missing) violations.push(`missing effects: the run completed with charges per order ${JSON.stringify(per)}`);
  if (!completed) violations.push(`stranded: the run is ${status} on the plane ${RUN_MS} ms after it started`);
  const planeRows = await fleet.rows(id);
  const summary = await fleet.execution(id);
  const ex = summary?.execution;
  const takeovers = (summary?.takeovers ?? []).length;
  if (completed) {
    const ends = planeRows.filter((r) => r.step === 'run_end');
    const seqs = planeRows.map((r) => r.seq);
    if (ex.holeCount !== 0 || !ex.complete)
      violations.push(
        `unfinished: the plane's copy is incomplete (${ex.holeCount} holes): ${JSON.stringify(summary.holes).slice(0, 400)}`,
      );
    if (ends.length !== 1 || planeRows.at(-1)?.step !== 'run_end')
      violations.push(
        `unfinished: the plane holds ${ends.length} run-end markers, the last row is ${planeRows.at(-1)?.nodeId}`,
      );
    if (seqs.some((s, i) => s !== i)) violations.push(`unfinished: the plane's seqs are not 0..${seqs.length - 1}`);
  }
  // the event log: the test's, the machines' (their own clocks), the charges and what the plane received, in time order
  for (const l of ledger) note(machineOf(l), `CHARGED order ${l.order} (pid ${l.pid})`, l.at);
  for (const r of plane.rows)
    note('plane', `row ${r.seq} ${r.nodeId} ${r.status} from ${writerName(r.writerId)}`, r.at);
  for (const e of plane.events) {
    const other = e.kind === 'idempotency' && plane.entries.find((x) => x.key === e.key)?.writerId !== e.writerId;
    note(
      'plane',
      `${e.kind} ${e.key ?? ''} from ${writerName(e.writerId)} received${other ? " (the plane holds another writer's entry for it)" : ''}`,
      e.at,
    );
  }
  for (const q of plane.refused)
    note('plane', `refused ${q.kind ?? ''} from ${writerName(q.writerId)}: ${q.code}: ${q.reason.slice(0, 160)}`, q.at);
  for (const t of plane.takeovers)
    note(
      'plane',
      `takeover from seq ${t.fromSeq}: ${writerName(t.loser)} → ${writerName(t.winner)} (the loser's last contact ${t.lastContact ? `+${t.lastContact - t0} ms` : 'unknown'})`,
      t.at,
    );
  note(
    'test',
    `plane: ${ex?.status ?? 'absent'}, ${planeRows.length} rows: ${planeRows.map((r) => `${r.seq}:${r.nodeId}@${writerName(r.writerId)}`).join(' ')}`,
  );
  note(
    'test',
    `plane idempotency entries: ${plane.entries.map((e) => `${e.key}@${writerName(e.writerId)}`).join(' ')}`,
  );
  const log = entries
    .map((e, i) => [e, i] as const)
    .sort((x, y) => x[0][0] - y[0][0] || x[1] - y[1])
    .map(([[at, who, what]]) => `${String(at - t0).padStart(7)} ms ${who.padEnd(5)} ${what}`);
  log.unshift(
    `t0 = ${new Date(t0).toISOString()}; machines: ${allSeats.map((s) => `${s.name}${s.generation ? `(restart ${s.generation})` : ''} pid ${s.m.pid} writer ${s.m.writerId}`).join(', ')}`,
  );

  const unfinished = violations.filter((v) => v.startsWith('unfinished'));
  const result: FleetTrialResult = {
    seed,
    executionId: id,
    plan,
    ok: violations.length === 0,
    ms: ms_,
    doubles,
    doubleKinds,
    missing,
    stranded: !completed,
    completedAfter,
    unfinished,
    violations,
    fired,
    restarts,
    takeovers,
    notes,
    log,
    ledger,
  };
  // the store files of this trial (a soak runs hundreds)
  for (const f of readdirSync(fleet.tmp.dir))
    if (f.startsWith(`${id}-`)) rmSync(join(fleet.tmp.dir, f), { force: true });
  return result;

  function writerName(w: string): string {
    return allSeats.find((s) => s.m.writerId === w)?.name ?? w.slice(0, 16);
  }
  function machineOf(l: LedgerLine): string {
    return l.machine.replace(`${id}-`, '');
  }

  /**
   * Why an order was charged again (`second`, after `first`): what the plane had of the first charge's
   * record by then (accepted: the promise is broken; refused or never received: the window where the
   * effect ran and its record was only in that machine's store), and whether the repeating machine
   * stalled between its last check and the effect (the window the design accepts).
   */
  function repeated(first: LedgerLine, second: LedgerLine): { kind: DoubleKind; text: string } {
    const key = `charge:${id}:${first.order}`;
    const firstSeat = allSeats.find((s) => s.m.pid === first.pid);
    const secondSeat = allSeats.find((s) => s.m.pid === second.pid);
    const writer = firstSeat?.m.writerId;
    const same = writer && writer === secondSeat?.m.writerId ? ' (the same store file)' : '';
    // the plane's record of the first charge: received (an event of that writer), and whose entry the plane holds for the key
    const received = plane.events.find((e) => e.kind === 'idempotency' && e.key === key && e.writerId === writer);
    const heldBy = plane.entries.find((e) => e.key === key)?.writerId;
    const refused = plane.refused.filter((q) => q.writerId === writer && q.payload.includes(key));
    // either charge may be the one a stalled machine made after its last check (the first, when the stalled one charged before the owner)
    const windows = [
      { charge: first, seat: firstSeat },
      { charge: second, seat: secondSeat },
    ].flatMap(({ charge, seat }) => {
      const w = seat ? stalledAfterCheck(seat, charge) : null;
      return w ? [`${machineOf(charge)}'s charge at +${charge.at - t0} ms is a stall after its last check: ${w}`] : [];
    });
    let text: string;
    let kind: DoubleKind = windows.length ? 'window' : 'unsent';
    if (received && received.at <= second.at) {
      if (!windows.length) kind = 'broken';
      text = `${windows.length ? 'in the accepted window' : 'BROKEN PROMISE'}${same}: the plane received the first charge's record at +${received.at - t0} ms (its entry for the key is ${heldBy === writer ? 'that one' : `${writerName(heldBy ?? '?')}'s`}), ${second.at - received.at} ms before the repeat`;
      // the record came in from a writer the plane had already fenced (its rows refused, its entry kept)
      const fenced = plane.takeovers.find((t) => t.loser === writer && t.at <= received.at);
      if (fenced)
        text += `; it came in after ${writerName(writer ?? '')} had lost the run (taken over at +${fenced.at - t0} ms): the plane kept a fenced writer's entry, and the owner's check before the effect is local`;
    } else if (received) {
      text = `the first charge's record reached the plane only at +${received.at - t0} ms, after the repeat (the plane holds ${writerName(heldBy ?? '?')}'s entry)${same}`;
    } else if (refused.length) {
      text = `the first charge's record reached the plane at +${refused[0].at - t0} ms and was refused (${refused[0].code}: its machine had lost the run)${same}`;
    } else {
      text = `the first charge's record never reached the plane (its machine was killed or stopped before its drain sent it)${same}`;
    }
    for (const w of windows) text += `; ${w}`;
    return { kind, text };
  }

  /**
   * The accepted window (DESIGN.md §5b), shown by the trace: the machine's last lease check before the charge
   * was written before the machine was stopped and answered without a loss (the check passed: the plane still held
   * the run for it then, or did not know the run yet), and once continued it charged on that answer with no
   * further check. Null when the charge does not fit.
   */
  function stalledAfterCheck(seat: Seat, charge: LedgerLine): string | null {
    const stop = seat.stops.filter((x) => x.cont !== null && x.cont <= charge.at).at(-1);
    if (!stop || charge.at - stop.cont! > RESIDUAL_MS) return null;
    const check = calls
      .get(seat.name)!
      .filter((c) => c.path.includes('/lease') && c.sentAt <= charge.at)
      .at(-1);
    // a stopped process sends nothing: a call the proxy took in before the continue was written before the stop (the
    // proxy's clock may read it a little after the stop, the test process being busy); one written after the continue
    // and answered before the charge was taken in before the charge
    if (!check || check.sentAt > stop.cont!) return null;
    const lost = check.status === 409 && ['LEASE_LOST', 'RUN_CANCELLED', 'WRITER_COPY'].includes(check.code ?? '');
    if (lost) return null;
    const answer =
      check.answeredAt === null
        ? 'never answered'
        : `answered ${check.status}${check.code ? ` ${check.code}` : ''} at +${check.answeredAt - t0} ms`;
    const how =
      check.status === 200
        ? ''
        : ` (a check that passed without the plane holding the run for it: client/replica/connect.ts planeGuard's renew takes that answer for no loss)`;
    return `its lease check reached the proxy at +${check.sentAt - t0} ms and was ${answer}${how}; the machine was stopped at +${stop.at - t0} ms, continued at +${stop.cont! - t0} ms and charged ${charge.at - stop.cont!} ms later with no check since`;
  }
}

/** What the plane received of a run, with when (its own tables: rows, accepted events, refusals, takeovers). */
async function planeTimeline(fleet: Fleet, id: string) {
  const db = fleet.plane.database.db as unknown as import('drizzle-orm/pglite').PgliteDatabase;
  const time = (d: Date | string | null) => (d ? new Date(d).getTime() : 0);
  const rows = await db
    .select({
      seq: checkpoints.seq,
      nodeId: checkpoints.nodeId,
      status: checkpoints.status,
      writerId: checkpoints.writerId,
      at: checkpoints.receivedAt,
    })
    .from(checkpoints)
    .where(eq(checkpoints.executionId, id));
  const evs = await db
    .select({ kind: events.kind, key: events.key, writerId: events.writerId, at: events.receivedAt })
    .from(events)
    .where(eq(events.executionId, id));
  const refused = await db
    .select({
      kind: quarantine.kind,
      writerId: quarantine.writerId,
      code: quarantine.code,
      reason: quarantine.reason,
      payload: quarantine.payload,
      at: quarantine.receivedAt,
    })
    .from(quarantine)
    .where(eq(quarantine.executionId, id));
  const takeovers = await db
    .select({
      fromSeq: runTakeovers.fromSeq,
      winner: runTakeovers.winnerWriterId,
      loser: runTakeovers.loserWriterId,
      lastContact: runTakeovers.loserLastContactAt,
      at: runTakeovers.at,
    })
    .from(runTakeovers)
    .where(eq(runTakeovers.executionId, id));
  const held = await db
    .select({ key: idempotency.key, writerId: idempotency.writerId })
    .from(idempotency)
    .where(and(eq(idempotency.executionId, id)));
  return {
    rows: rows.map((r) => ({ ...r, at: time(r.at) })).sort((x, y) => x.seq - y.seq),
    events: evs.map((e) => ({ ...e, at: time(e.at) })),
    refused: refused.map((q) => ({ ...q, at: time(q.at) })),
    takeovers: takeovers.map((t) => ({
      ...t,
      at: time(t.at),
      lastContact: t.lastContact ? time(t.lastContact) : null,
    })),
    entries: held.sort((x, y) => x.key.localeCompare(y.key)),
  };
}

function brief(out: Outcome | null): string {
  if (!out) return 'no answer';
  if (out.died) return `died (${out.died})`;
  if (out.ok) return `ok ${JSON.stringify(out.result).slice(0, 160)}`;
  return `error ${out.error?.code}: ${out.error?.message?.slice(0, 200)}`;
}

export interface FleetCampaignSummary {
  trials: number;
  passed: number;
  doubles: number;
  /** Double effects by cause. */
  doubleKinds: Record<DoubleKind, number>;
  missing: number;
  stranded: number;
  unfinished: number;
  /** Faults fired, by kind ("kill", "stop"). */
  faults: Record<string, number>;
  restarts: number;
  takeovers: number;
  failures: FleetTrialResult[];
  ms: number;
}

/** The seed of trial `i` of a campaign seeded `seed`. */
export const trialSeed = (seed: number, i: number) => (seed * 1009 + i * 7919) % 2_147_483_647;

/**
 * Trials one after another on one plane. `seeds` replays those trials
 * exactly (their plans); otherwise trial i's seed is trialSeed(seed, i).
 */
export async function runFleetCampaign(o: {
  trials: number;
  seed: number;
  seeds?: number[];
  backend?: Backend;
  onTrial?: (r: FleetTrialResult, i: number, totals: FleetCampaignSummary) => void;
}): Promise<FleetCampaignSummary> {
  const fleet = await openFleet(o.backend ?? 'pglite');
  const seeds = o.seeds?.length ? o.seeds : Array.from({ length: o.trials }, (_, i) => trialSeed(o.seed, i));
  const t0 = Date.now();
  const totals: FleetCampaignSummary = {
    trials: 0,
    passed: 0,
    doubles: 0,
    doubleKinds: { broken: 0, unsent: 0, window: 0 },
    missing: 0,
    stranded: 0,
    unfinished: 0,
    faults: {},
    restarts: 0,
    takeovers: 0,
    failures: [],
    ms: 0,
  };
  try {
    for (const [i, seed] of seeds.entries()) {
      let r: FleetTrialResult;
      try {
        r = await runFleetTrial(fleet, seed);
      } catch (e) {
        // the harness itself failed (a machine that never came up): counted as a failed trial, with what it said
        r = {
          seed,
          executionId: `fleet-${seed}`,
          plan: planTrial(seed),
          ok: false,
          ms: 0,
          doubles: 0,
          doubleKinds: { broken: 0, unsent: 0, window: 0 },
          missing: 0,
          stranded: false,
          completedAfter: null,
          unfinished: [],
          violations: [`harness error: ${(e as Error).stack ?? e}`],
          fired: [],
          restarts: 0,
          takeovers: 0,
          notes: [],
          log: [],
          ledger: [],
        };
      }
      await fleet.killAll();
      await TraceProxy.closeAll();
      totals.trials++;
      if (r.ok) totals.passed++;
      else totals.failures.push(r);
      totals.doubles += r.doubles;
      for (const k of ['broken', 'unsent', 'window'] as const) totals.doubleKinds[k] += r.doubleKinds[k];
      totals.missing += r.missing;
      totals.stranded += r.stranded ? 1 : 0;
      totals.unfinished += r.unfinished.length ? 1 : 0;
      totals.restarts += r.restarts;
      totals.takeovers += r.takeovers;
      for (const f of r.fired) totals.faults[f.split(' ')[0]] = (totals.faults[f.split(' ')[0]] ?? 0) + 1;
      totals.ms = Date.now() - t0;
      o.onTrial?.(r, i, totals);
    }
  } finally {
    await fleet.close();
  }
  totals.ms = Date.now() - t0;
  return totals;
}

/** One progress line per trial: n/N, seed, outcome, running totals. */
export function progressLine(r: FleetTrialResult, i: number, n: number, t: FleetCampaignSummary): string {
  const outcome = r.ok ? 'ok' : `FAILED (${r.violations.map((v) => v.split(':')[0]).join(', ')})`;
  return (
    `[fleet] trial ${i + 1}/${n} seed ${r.seed} ${outcome} in ${(r.ms / 1000).toFixed(1)} s (run completed ${r.completedAfter === null ? 'never' : `at +${(r.completedAfter / 1000).toFixed(1)} s`}) — ${r.fired.join(', ') || 'no fault fired'}` +
    `${r.restarts ? `, ${r.restarts} restart(s)` : ''}, takeovers ${r.takeovers} | totals: ${t.passed}/${t.trials} ok, double effects ${t.doubles}; repeated attempts the service deduped or not: ${t.doubleKinds.broken} broken, ${t.doubleKinds.unsent} record not at the plane, ${t.doubleKinds.window} stalled after the check, stranded ${t.stranded}, unfinished ${t.unfinished}, missing ${t.missing}`
  );
}

/** Everything about a failed trial: its plan, violations, notes and event log. */
export function failureReport(r: FleetTrialResult): string {
  return [
    `[fleet] trial seed ${r.seed} (${r.executionId}) FAILED — replay: WAYMARK_FLEET_SEEDS=${r.seed}`,
    `  plan: ${describePlan(r.plan)}`,
    ...r.violations.map((v) => `  violation: ${v}`),
    ...r.notes.map((n) => `  note: ${n}`),
    '  event log:',
    ...r.log.map((l) => `    ${l}`),
  ].join('\n');
}
