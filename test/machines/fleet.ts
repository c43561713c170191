/**
 * The test's half of the multi-machine harness: one real plane
 * over HTTP on 127.0.0.1 (embedded PGlite, or a Postgres database of its
 * own), an ingest+read key, an effect ledger outside every store, and
 * machines: real processes (test/machines/machine.ts), each with its own
 * SQLite file, driven over IPC. Every wait polls for a condition under a
 * finite deadline; `close()` SIGKILLs every machine (stopped ones too) and
 * removes the scratch dir.
 */
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { forkTs } from '../helpers/child.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';
import type { LedgerLine, MachineConfig, MachineMessage, Phase } from './machine.js';

const MACHINE = fileURLToPath(new URL('./machine.ts', import.meta.url));

/** The plane's takeover delay in these scenarios (WAYMARK_TAKEOVER_AFTER_MS): a crashed run is taken over within seconds. */
export const TAKEOVER_AFTER_MS = 2000;
/** The agents' lease: shorter than the takeover delay, so a machine's local lease is never what holds a takeover back. */
export const LEASE_MS = 1500;
/** How long a scenario waits for any one condition before it fails (a loaded 2-core machine is slow, never this slow). */
export const WAIT_MS = 30_000;
/** How long a command may take before the harness answers it itself (HARNESS_TIMEOUT): longer than any retry deadline inside one. */
export const COMMAND_MS = 45_000;

export type Backend = 'pglite' | 'postgres';

export interface Outcome {
  ok: boolean;
  /** The machine died (SIGKILL) before it answered. */
  died?: NodeJS.Signals | number | null;
  /** The machine did not answer within the command's deadline (the error's code is then HARNESS_TIMEOUT). */
  timedOut?: boolean;
  result?: any;
  error?: { code: string | null; message: string; details?: any; refusals?: string[] };
}

/** Poll `check` until it returns something truthy; throws naming `what` after `deadlineMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | false | null | undefined> | T | false | null | undefined,
  deadlineMs = WAIT_MS,
  everyMs = 50,
): Promise<T> {
  const t0 = Date.now();
  let last: unknown = null;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() - t0 > deadlineMs)
      throw new Error(`waited ${deadlineMs} ms for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export class Machine {
  readonly messages: MachineMessage[] = [];
  out = '';
  err = '';
  writerId = '';
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  private req = 0;
  private readonly pending = new Map<number, (o: Outcome) => void>();
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly name: string,
    readonly db: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (d) => (this.out += d));
    child.stderr?.on('data', (d) => (this.err += d));
    child.on('message', (m: MachineMessage) => {
      this.messages.push(m);
      if (m.type === 'outcome') {
        this.pending.get(m.req)?.(m.ok ? { ok: true, result: m.result } : { ok: false, error: m.error });
        this.pending.delete(m.req);
      }
      for (const l of this.listeners) l();
    });
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    void this.exited.then(([code, signal]) => {
      for (const [, resolve] of this.pending) resolve({ ok: false, died: signal ?? code });
      this.pending.clear();
      for (const l of this.listeners) l();
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Send a command; resolves with its outcome, or `died` when the machine is killed first, or `timedOut`
   * (HARNESS_TIMEOUT) when it has not answered within `deadlineMs` (a stopped machine's clock runs too).
   */
  command(cmd: string, id?: string, opts: Record<string, unknown> = {}, deadlineMs = COMMAND_MS): Promise<Outcome> {
    const req = ++this.req;
    if (!this.alive()) return Promise.resolve({ ok: false, died: this.child.signalCode ?? this.child.exitCode });
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(req);
        resolve({
          ok: false,
          timedOut: true,
          error: {
            code: 'HARNESS_TIMEOUT',
            message: `machine ${this.name} did not answer '${cmd}' within ${deadlineMs} ms`,
          },
        });
      }, deadlineMs);
      this.pending.set(req, (o) => {
        clearTimeout(timer);
        resolve(o);
      });
      // a machine exiting has closed its channel before its exit is seen: that is a death, not a harness crash
      this.child.send({ type: 'cmd', req, cmd, id, opts }, (e) => {
        if (!e) return;
        clearTimeout(timer);
        this.pending.delete(req);
        resolve({ ok: false, died: this.child.signalCode ?? this.child.exitCode });
      });
    });
  }

  configure(patch: Partial<MachineConfig>): void {
    this.child.send({ type: 'config', patch }, () => undefined);
  }

  release(order?: number, phase?: Phase): void {
    this.child.send({ type: 'release', order, phase }, () => undefined);
  }

  /** The first message (past or coming) matching `pred`; fails if the machine exits or `deadlineMs` passes first. */
  until<M extends MachineMessage>(what: string, pred: (m: MachineMessage) => m is M, deadlineMs?: number): Promise<M>;
  until(what: string, pred: (m: MachineMessage) => boolean, deadlineMs?: number): Promise<MachineMessage>;
  until(what: string, pred: (m: MachineMessage) => boolean, deadlineMs = WAIT_MS): Promise<MachineMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.messages.find(pred);
        if (hit) return done(() => resolve(hit));
        if (!this.alive())
          done(() =>
            reject(
              new Error(
                `machine ${this.name} exited (${this.child.signalCode ?? this.child.exitCode}) before ${what}; stderr: ${this.err.slice(-2000)}`,
              ),
            ),
          );
      };
      const timer = setTimeout(
        () =>
          done(() =>
            reject(
              new Error(`machine ${this.name}: waited ${deadlineMs} ms for ${what}; stderr: ${this.err.slice(-2000)}`),
            ),
          ),
        deadlineMs,
      );
      const done = (f: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        f();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** The charge tool of `order` reached `phase` (`held`: it waits there for `release`). */
  inside(order: number, phase: Phase | 'held', executionId?: string, deadlineMs?: number): Promise<MachineMessage> {
    return this.until(
      `charge ${order} to reach '${phase}'`,
      (m) =>
        m.type === 'inside' &&
        m.order === order &&
        m.phase === phase &&
        (!executionId || m.executionId === executionId),
      deadlineMs,
    );
  }

  /** Replica events this machine emitted (all, or of one name), in order. */
  events(name?: string): { name: string; payload: any; at: number }[] {
    return this.messages.filter(
      (m): m is Extract<MachineMessage, { type: 'event' }> => m.type === 'event' && (!name || m.name === name),
    );
  }

  /**
   * Recover in watch mode until a pass recovered `executionId`, within
   * `withinMs`: that pass's entry for the run. Throws naming its last pass.
   */
  async recoverInWatch(executionId: string, withinMs: number): Promise<any> {
    const watch = this.command('recover', undefined, { watch: true, intervalMs: 300 });
    const found = () =>
      this.passes()
        .flat()
        .find((r) => r.executionId === executionId && r.outcome === 'recovered');
    const ok = await waitFor(`${this.name} to recover the run`, () => !!found(), withinMs).catch(
      (e: Error) =>
        new Error(
          `${e.message}; its last pass: ${JSON.stringify(this.passes().at(-1) ?? null)}; ${this.passes().length} passes; ${this.describe()}`,
        ),
    );
    this.command('recover-stop');
    await watch;
    if (ok instanceof Error) throw ok;
    return found();
  }

  /** Its recovery passes so far (watch mode). */
  passes(): any[][] {
    return this.messages
      .filter((m): m is Extract<MachineMessage, { type: 'pass' }> => m.type === 'pass')
      .map((m) => m.runs);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.alive()) this.child.kill(sig);
  }

  async kill(): Promise<void> {
    if (!this.alive()) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Exit cleanly (flush for up to 3 s, stop the replica, close the store); SIGKILLed if it has not exited within 15 s. */
  async exit(): Promise<void> {
    if (!this.alive()) return;
    void this.command('exit', undefined, {}, 15_000);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** What to print when an assertion about this machine fails. */
  describe(): string {
    return `${this.name} (pid ${this.child.pid}, writer ${this.writerId}): stderr ${this.err.slice(-1500)}`;
  }
}

export interface Fleet {
  backend: Backend;
  url: string;
  key: string;
  ledgerPath: string;
  tmp: ReturnType<typeof scratchDir>;
  plane: TestPlane;
  /** A fault proxy in front of the plane: a machine given its url (not the plane's) can be cut off. */
  proxy: FaultProxy;
  /** Start a machine (its own store file `<name>.db` unless `db` is given) and wait until it is connected and ready. */
  machine(name: string, o?: Partial<MachineConfig>): Promise<Machine>;
  /** Every charge in the ledger (of one run). */
  ledger(executionId?: string): LedgerLine[];
  /** Charges per order of a run: `[n0, n1, …]` over orders 0..steps-1. */
  charges(executionId: string, steps: number): number[];
  /** The plane's view of a run (GET /v1/executions/:id), or null (404). */
  execution(executionId: string): Promise<any | null>;
  /** The plane's rows of a run, by seq. */
  rows(executionId: string): Promise<{ seq: number; nodeId: string; step: string; status: string; writerId: string }[]>;
  /** The idempotency keys the plane holds for a run. */
  entries(executionId: string): Promise<string[]>;
  /** Copy a closed store file, with its -wal and -shm when present. */
  copyStore(from: string, to: string): void;
  /** SIGKILL every machine (stopped ones too) started since the last call. */
  killAll(): Promise<void>;
  close(): Promise<void>;
}

/** A plane on `backend` (PGlite in this process, or Postgres with a database of its own) and a scratch dir. */
export async function openFleet(backend: Backend, o: { takeoverAfterMs?: number } = {}): Promise<Fleet> {
  const tmp = scratchDir(`waymark-machines-${backend}-`);
  let database: TestDatabase | null = null;
  if (backend === 'postgres') database = await createTestDatabase('waymark_machines');
  const plane = await startTestPlane(database ? { url: database.url } : 'pglite', {
    takeoverAfterMs: o.takeoverAfterMs ?? TAKEOVER_AFTER_MS,
  });
  const key = await plane.key('fleet', ['ingest', 'read']);
  const proxy = await new FaultProxy(plane.url).start();
  const ledgerPath = tmp.file('ledger.jsonl');
  const machines: Machine[] = [];
  const get = async (path: string) => {
    const r = await call(`${plane.url}${path}`, { key });
    if (r.status === 404) return null;
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const fleet: Fleet = {
    backend,
    url: plane.url,
    key,
    ledgerPath,
    tmp,
    plane,
    proxy,
    async machine(name, c = {}) {
      const config: MachineConfig = {
        name,
        db: tmp.file(`${name}.db`),
        url: plane.url,
        apiKey: key,
        ledger: ledgerPath,
        leaseMs: LEASE_MS,
        ...c,
      };
      const m = new Machine(name, config.db, forkTs(MACHINE, [JSON.stringify(config)]));
      machines.push(m);
      const ready = await m.until(
        'ready',
        (x): x is Extract<MachineMessage, { type: 'ready' }> => x.type === 'ready',
        120_000,
      );
      m.writerId = ready.writerId;
      return m;
    },
    ledger(executionId) {
      if (!existsSync(ledgerPath)) return [];
      const lines = readFileSync(ledgerPath, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LedgerLine);
      return executionId ? lines.filter((l) => l.executionId === executionId) : lines;
    },
    charges(executionId, steps) {
      const n = new Array(steps).fill(0);
      for (const l of fleet.ledger(executionId)) n[l.order] = (n[l.order] ?? 0) + 1;
      return n;
    },
    execution: (id) => get(`/v1/executions/${encodeURIComponent(id)}`),
    async rows(id) {
      const out = [];
      let cursor: string | null = null;
      do {
        const page: any = await get(
          `/v1/executions/${encodeURIComponent(id)}/rows?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        if (!page) return [];
        out.push(
          ...page.items.map((r: any) => ({
            seq: r.seq,
            nodeId: r.nodeId,
            step: r.step,
            status: r.status,
            writerId: r.writerId,
          })),
        );
        cursor = page.nextCursor;
      } while (cursor);
      return out;
    },
    async entries(id) {
      const page = await get(`/v1/executions/${encodeURIComponent(id)}/restore?limit=1`);
      return page ? (page.idempotency as { key: string }[]).map((e) => e.key) : [];
    },
    copyStore(from, to) {
      for (const suffix of ['', '-wal', '-shm'])
        if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
    },
    async killAll() {
      const all = machines.splice(0);
      await Promise.all(
        all.map(async (m) => {
          if (!m.alive()) return;
          m.child.kill('SIGKILL');
          await m.exited;
        }),
      );
    },
    async close() {
      await fleet.killAll();
      await proxy.close();
      await plane.close();
      await database?.drop();
      tmp.cleanup();
    },
  };
  return fleet;
}

/** Summaries `seq:nodeId:status` of rows, for messages. */
export const shown = (rows: { seq: number; nodeId: string; status: string; writerId?: string }[]) =>
  rows.map((r) => `${r.seq}:${r.nodeId}:${r.status}`).join(' ');
