/**
 * The kill campaign. Each trial runs a client workload (pauses, approvals,
 * idempotent charges counted in a ledger file the runs cannot roll back, a
 * fork, a run deleted and started again under one id, a connected drain) in a real process, SIGKILLs the client or the
 * plane at a named commit-boundary fault point (or puts a proxy answering
 * request-level 400s in the way), restarts what died, recovers every run,
 * drains to zero, and checks the invariants.
 */
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { restoreFromPlane } from '../../client/replica/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { decodeChain } from '../../shared/codec.js';
import type { Checkpoint } from '../../shared/rows.js';
import { Ledger } from '../../examples/agents/refund.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { FaultProxy } from '../helpers/fault-proxy.js';

const PLANE = fileURLToPath(new URL('../plane/plane-child.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const RESUMERS = fileURLToPath(new URL('./resumers-worker.ts', import.meta.url));
const DOUBLE_CLAIM = fileURLToPath(new URL('./double-claim-worker.ts', import.meta.url));

/** Client fault points and how many hits a trial may wait for before the kill. */
export const CLIENT_POINTS: [string, number][] = [
  ['store.put.afterCommit', 14],
  // every put and lease acquisition passes its group commit (a batch of one while this worker's runs go one after another)
  ['store.groupCommit.beforeCommit', 14],
  ['store.recordInterrupt.afterCommit', 2],
  ['store.claim.afterCommit', 2],
  ['store.idempotency.afterCommit', 3],
  ['runtime.beforeModel', 7],
  ['runtime.beforeTool', 3],
  ['runtime.afterTool', 3],
  ['runtime.afterRunEnd', 4],
  ['drain.afterFetch', 3],
  ['drain.afterResponse', 3],
  ['drain.afterApply', 3],
  ['claim.afterPlaneClaim', 2],
];
/**
 * Shapes without a kill: the worker's path to the plane answers every request
 * with a request-level 400 (nginx's "plain HTTP request was sent to HTTPS
 * port") while it works, then heals. Claims are refused (CLAIM_REFUSED),
 * nothing is quarantined, recovery through the healed path finishes every run.
 */
export const PROXY_POINTS: [string, number][] = [['proxy.requestLevel400', 1]];
const NGINX_400 =
  '<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head><body><center>nginx</center></body></html>';
/**
 * Concurrent resumers of successive pauses: three processes
 * on one store (one writer id) and one plane answer a run's two pauses in
 * turn; two of them are SIGKILLed at this point if they get there; recovery
 * finishes the run. Each pause must be answered exactly once (a resumer that
 * read an answered pause must not take the next one) and the charge made once.
 */
export const RESUMER_POINTS: [string, number][] = [['store.claim.afterCommit', 2]];
export const PLANE_POINTS: [string, number][] = [
  ['plane.ingest.afterCommit', 3],
  ['plane.claim.afterCommit', 2],
];

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A plane in its own process on a fixed port; restartable with or without a fault. */
export class PlaneProcess {
  child: ChildProcess | null = null;
  port = 0;
  url = '';
  deaths = 0;
  /** `dir` is a PGlite folder, or a `postgres://` URL. */
  constructor(private readonly dir: string) {}
  /**
   * Start (or restart on the same port). The port is fixed below the kernel's
   * ephemeral range: a restart must not find its port handed to another test's
   * port-0 listener while this plane was down (a client would then talk to the
   * wrong plane).
   */
  async start(fault?: string): Promise<void> {
    if (this.port === 0) {
      for (let attempt = 0; ; attempt++) {
        this.port = 20_000 + Math.floor(Math.random() * 12_000);
        try {
          return await this.spawn(fault);
        } catch (e) {
          if (attempt >= 5) throw e;
        }
      }
    }
    return this.spawn(fault);
  }

  private async spawn(fault?: string): Promise<void> {
    const child = forkTs(PLANE, [this.dir.startsWith('postgres') ? this.dir : `pglite:${this.dir}`], {
      ...(fault ? { WAYMARK_PLANE_FAULT: fault } : {}),
      WAYMARK_PLANE_PORT: String(this.port),
    });
    this.child = child;
    child.on('exit', (_code, signal) => {
      if (signal === 'SIGKILL' && this.child === child) this.deaths++;
    });
    const ready = await nextMessage<{ type: string; url: string }>(child, (m) => m.type === 'ready');
    this.url = ready.url;
    this.port = Number(new URL(ready.url).port);
  }
  async key(): Promise<string> {
    const answer = nextMessage<{ type: string; key: string }>(this.child!, (m) => m.type === 'key');
    this.child!.send({ type: 'key', project: 'campaign', scopes: ['ingest', 'read'] });
    return (await answer).key;
  }
  alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }
  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((r) => {
      c.once('exit', () => r());
      c.send({ type: 'exit' });
    });
  }
}

export type Target = 'client' | 'plane' | 'proxy' | 'resumers' | 'double';

export interface TrialResult {
  trial: string;
  target: Target;
  point: string;
  hits: number;
  killed: boolean;
  violations: string[];
}

async function planeRows(url: string, key: string, executionId: string): Promise<string[] | null> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await fetch(
      `${url}/v1/executions/${encodeURIComponent(executionId)}/rows?limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    if (res.status === 404) return null;
    const body = (await res.json()) as { items: { id: string }[]; nextCursor: string | null };
    ids.push(...body.items.map((r) => r.id));
    cursor = body.nextCursor;
  } while (cursor);
  return ids;
}

export async function runTrial(o: {
  plane: PlaneProcess;
  key: string;
  dir: string;
  trial: string;
  target: Target;
  point: string;
  hits: number;
  faultFrom?: 'again';
}): Promise<TrialResult> {
  if (o.target === 'resumers') return runResumersTrial(o);
  if (o.target === 'double') return runDoubleClaimTrial(o);
  const db = `${o.dir}/${o.trial}.db`;
  const ledger = new Ledger(`${o.dir}/${o.trial}.ledger`);
  const violations: string[] = [];
  let killed = false;
  if (o.target === 'plane') {
    await o.plane.stop();
    await o.plane.start(`${o.point}:${o.hits}`);
  }
  const proxy = o.target === 'proxy' ? await new FaultProxy(o.plane.url).start() : null;
  if (proxy) proxy.rule = () => ({ status: 400, html: NGINX_400 });
  const args = (mode: string) => [mode, db, proxy?.url ?? o.plane.url, o.key, o.trial, ledger.path];
  // restart the plane as soon as it dies, so the worker's drain can finish
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      if (!o.plane.alive()) {
        killed = true;
        await o.plane.start();
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const work = await runTs(
    WORKER,
    args('work'),
    o.target === 'client'
      ? { WAYMARK_FAULT: `${o.point}:${o.hits}`, ...(o.faultFrom ? { WAYMARK_FAULT_FROM: o.faultFrom } : {}) }
      : {},
  );
  if (work.signal === 'SIGKILL') killed = true;
  else if (proxy) {
    // the first resume asks the plane for the claim and is refused: nothing may run without it
    killed = proxy.seen.length > 0;
    if (work.code === 0 || !work.stderr.includes('CLAIM_REFUSED'))
      violations.push(
        `worker behind a 400 proxy was not refused its claim (code ${work.code}): ${work.stderr.slice(-400)}`,
      );
  } else if (work.code !== 0) violations.push(`worker failed: ${work.stderr.slice(-400)}`);
  watching = false;
  await watcher;
  if (!o.plane.alive()) await o.plane.start();
  if (proxy) proxy.rule = null;
  const rec = await runTs(WORKER, args('recover'));
  await proxy?.close();
  if (rec.code !== 0) violations.push(`recovery failed: ${rec.stderr.slice(-400)}`);

  const store = new SqliteCheckpointer({ path: db });
  try {
    const runs = ['small', 'before', 'after', 'fork', 'again'].map((s) => `${o.trial}-${s}`);
    for (const id of runs) {
      const latest = await store.latest(id);
      if (!(latest?.step === 'run_end' && latest.status === 'completed'))
        violations.push(`${id} did not complete (latest: ${latest?.nodeId} ${latest?.status})`);
      if (await store.getPendingInterrupt(id)) violations.push(`${id} still has a pending pause`);
      const local = (await store.list(id)).map((r) => r.id);
      const remote = await planeRows(o.plane.url, o.key, id);
      if (!remote) violations.push(`${id} is not on the plane`);
      else {
        if (remote.length !== new Set(remote).size) violations.push(`${id}: duplicate rows on the plane`);
        const a = [...local].sort().join();
        const b = [...remote].sort().join();
        if (a !== b) violations.push(`${id}: plane rows (${remote.length}) != store rows (${local.length})`);
        const summary = (await (
          await fetch(`${o.plane.url}/v1/executions/${encodeURIComponent(id)}`, {
            headers: { authorization: `Bearer ${o.key}` },
          })
        ).json()) as {
          execution: { complete: boolean };
          holes: unknown[];
        };
        if (!summary.execution.complete)
          violations.push(`${id} is incomplete on the plane: ${JSON.stringify(summary.holes)}`);
      }
    }
    const charges = ledger.charges();
    // the run deleted and started again under one id: its first order charged once, its second once
    const orders = ['small', 'before', 'after', 'again1', 'again2'];
    for (const s of orders) {
      const n = charges.filter((c) => c.order === `${o.trial}-${s}`).length;
      if (n !== 1) violations.push(`${o.trial}-${s} charged ${n} times`);
    }
    if (charges.length !== orders.length)
      violations.push(`${charges.length} charges in total, expected ${orders.length}`);
    const again = await store.list(`${o.trial}-again`, { limit: 1 });
    if (!again[0] || !JSON.stringify(await store.readState(again[0])).includes(`${o.trial}-again2`))
      violations.push(`${o.trial}-again is not the run started again`);
    const stats = await store.outboxStats();
    if (stats.pendingCount !== 0) violations.push(`${stats.pendingCount} outbox rows never drained`);
    if (stats.quarantinedCount !== 0)
      violations.push(`${stats.quarantinedCount} rows quarantined: ${stats.lastQuarantineReason}`);
    const integrity = store.integrityCheck();
    if (integrity !== 'ok') violations.push(`integrity_check: ${integrity}`);
  } finally {
    await store.close();
  }
  return { trial: o.trial, target: o.target, point: o.point, hits: o.hits, killed, violations };
}

/** Where the plane and the store disagree about an execution's rows, as violations. */
async function compareWithPlane(
  store: SqliteCheckpointer,
  o: { plane: PlaneProcess; key: string },
  id: string,
  violations: string[],
): Promise<void> {
  const local = (await store.list(id)).map((r) => r.id);
  const remote = await planeRows(o.plane.url, o.key, id);
  if (!remote) violations.push(`${id} is not on the plane`);
  else {
    if (remote.length !== new Set(remote).size) violations.push(`${id}: duplicate rows on the plane`);
    if ([...local].sort().join() !== [...remote].sort().join())
      violations.push(`${id}: plane rows (${remote.length}) != store rows (${local.length})`);
  }
}

/** The "concurrent resumers of successive pauses" shape (see RESUMER_POINTS). */
export async function runResumersTrial(o: {
  plane: PlaneProcess;
  key: string;
  dir: string;
  trial: string;
  point: string;
  hits: number;
}): Promise<TrialResult> {
  const db = `${o.dir}/${o.trial}.db`;
  const ledger = new Ledger(`${o.dir}/${o.trial}.ledger`);
  const id = `${o.trial}-resumers`;
  const violations: string[] = [];
  const args = (mode: string, tag?: string) => [mode, db, o.plane.url, o.key, id, ledger.path, ...(tag ? [tag] : [])];
  const start = await runTs(RESUMERS, args('start'));
  if (start.code !== 0) violations.push(`start failed: ${start.stderr.slice(-400)}`);
  const fault = { WAYMARK_FAULT: `${o.point}:${o.hits}` };
  // r1 and r2 carry the fault, r3 does not: whoever dies, someone is left to race for the next pause
  const resumers = await Promise.all(
    ['r1', 'r2', 'r3'].map((tag) => runTs(RESUMERS, args('resume', tag), tag === 'r3' ? {} : fault)),
  );
  const killed = resumers.some((r) => r.signal === 'SIGKILL');
  for (const [i, r] of resumers.entries()) {
    if (r.signal !== 'SIGKILL' && r.code !== 0)
      violations.push(`resumer r${i + 1} failed (code ${r.code}): ${r.stderr.slice(-400)}`);
  }
  const rec = await runTs(RESUMERS, args('recover'));
  if (rec.code !== 0) violations.push(`recovery failed: ${rec.stderr.slice(-400)}`);
  const store = new SqliteCheckpointer({ path: db });
  try {
    const rows = await store.list(id);
    const latest = rows[rows.length - 1];
    if (!(latest?.step === 'run_end' && latest.status === 'completed'))
      violations.push(`${id} did not complete (latest: ${latest?.nodeId} ${latest?.status})`);
    if (await store.getPendingInterrupt(id)) violations.push(`${id} still has a pending pause`);
    const pauses = rows.filter((r) => r.step === 'hitl_pause');
    const reasons = pauses.map((p) => p.interruptReason).join(',');
    if (reasons !== 'manager_approval,finance_approval')
      violations.push(`${id}: pauses ${reasons}, expected manager_approval then finance_approval`);
    for (const p of pauses) {
      // a claim writes the answered row with the pause as parent: two children means the pause was answered twice
      const answers = rows.filter((r) => r.parentId === p.id);
      if (answers.length !== 1 || answers[0].step !== 'tool_call') {
        violations.push(`${id}: pause ${p.interruptReason} (seq ${p.seq}) answered ${answers.length} times`);
      }
    }
    const charges = ledger.charges().filter((c) => c.order === id).length;
    if (charges !== 1) violations.push(`${id} charged ${charges} times`);
    await compareWithPlane(store, o, id, violations);
    const stats = await store.outboxStats();
    if (stats.pendingCount !== 0) violations.push(`${stats.pendingCount} outbox rows never drained`);
    if (stats.quarantinedCount !== 0)
      violations.push(`${stats.quarantinedCount} rows quarantined: ${stats.lastQuarantineReason}`);
    const integrity = store.integrityCheck();
    if (integrity !== 'ok') violations.push(`integrity_check: ${integrity}`);
  } finally {
    await store.close();
  }
  return { trial: o.trial, target: 'resumers', point: o.point, hits: o.hits, killed, violations };
}

export interface CampaignSummary {
  seed: number;
  trials: number;
  kills: Record<string, number>;
  violations: { trial: string; point: string; hits: number; violations: string[] }[];
}

/** Catch-up restores after an offline double claim: B is killed after its local claim (see runDoubleClaimTrial). */
export const DOUBLE_CLAIM_POINTS: [string, number][] = [['store.claim.afterCommit', 1]];

/** Every point of the campaign with its target, in the order trials cycle through them. */
export const CAMPAIGN_POINTS: readonly (readonly [Target, string, number])[] = [
  ...CLIENT_POINTS.map((p) => ['client', ...p] as const),
  ...PLANE_POINTS.map((p) => ['plane', ...p] as const),
  ...PROXY_POINTS.map((p) => ['proxy', ...p] as const),
  ...RESUMER_POINTS.map((p) => ['resumers', ...p] as const),
  ...DOUBLE_CLAIM_POINTS.map((p) => ['double', ...p] as const),
];

export async function runCampaign(o: {
  trials: number;
  seed: number;
  dir: string;
  onTrial?: (r: TrialResult) => void;
}): Promise<CampaignSummary> {
  const random = rng(o.seed);
  const plane = new PlaneProcess(`${o.dir}/plane`);
  await plane.start();
  const key = await plane.key();
  const summary: CampaignSummary = { seed: o.seed, trials: 0, kills: {}, violations: [] };
  try {
    const all = CAMPAIGN_POINTS;
    for (let i = 0; i < o.trials; i++) {
      // cycle through every point, hit counts drawn from the seed
      const [target, point, maxHits] = all[i % all.length];
      const hits = 1 + Math.floor(random() * maxHits);
      const r = await runTrial({ plane, key, dir: o.dir, trial: `t${o.seed}-${i}`, target, point, hits });
      summary.trials++;
      if (r.killed) summary.kills[point] = (summary.kills[point] ?? 0) + 1;
      if (r.violations.length) summary.violations.push({ trial: r.trial, point, hits, violations: r.violations });
      o.onTrial?.(r);
    }
  } finally {
    await plane.stop();
  }
  return summary;
}

/**
 * Catch-up restores after an offline double claim: machine A
 * runs a refund to its approval pause and drains it; machine B restores the
 * paused run from the plane. Both lose the plane (their paths reset every
 * connection) and both answer the pause: the claim guard finds the plane
 * offline and the local claims stand (documented as possible). A finishes the
 * run; B is SIGKILLed right after its claim committed, so its branch is the
 * answered row alone, shorter than A's (the shape in which a restore that
 * kept going after a taken seq grafted A's later rows onto B's). Then A comes
 * back and drains (its branch wins at the plane), then B: its row is refused,
 * its claim recorded as a conflict. Each makes a catch-up restore of the run.
 *
 * Violations: a store that grafted the other branch or fails to read a row;
 * B's restore not reporting the run diverged at the answered row, or A's
 * reporting anything; no claim conflict on the plane; a plane row that does
 * not decode or a plane copy that is not A's branch; the plane calling the run
 * incomplete; a restore onto a third, fresh store that fails, does not verify,
 * or does not read A's answer.
 */
export async function runDoubleClaimTrial(o: {
  plane: PlaneProcess;
  key: string;
  dir: string;
  trial: string;
  point?: string;
  hits?: number;
}): Promise<TrialResult> {
  const point = o.point ?? 'store.claim.afterCommit';
  const hits = o.hits ?? 1;
  const id = `${o.trial}-double`;
  const ledger = new Ledger(`${o.dir}/${o.trial}.ledger`);
  const dbs = { a: `${o.dir}/${o.trial}-a.db`, b: `${o.dir}/${o.trial}-b.db` };
  const violations: string[] = [];
  let killed = false;
  const run = async (mode: string, db: string, url: string, o2: { approver?: string; fault?: string } = {}) => {
    const r = await runTs(
      DOUBLE_CLAIM,
      [mode, db, url, o.key, id, ledger.path, ...(o2.approver ? [o2.approver] : [])],
      o2.fault ? { WAYMARK_FAULT: o2.fault } : {},
    );
    if (o2.fault && r.signal === 'SIGKILL') {
      killed = true;
      return {};
    }
    if (r.code !== 0) {
      violations.push(`${mode} on ${db} failed (code ${r.code}, signal ${r.signal}): ${r.stderr.slice(-400)}`);
      return null;
    }
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  };
  const result = () => ({ trial: o.trial, target: 'double' as const, point, hits, killed, violations });

  if (!(await run('start', dbs.a, o.plane.url))) return result();
  const restored = await run('restore', dbs.b, o.plane.url);
  if (!restored) return result();
  if (!restored.pendingImported)
    violations.push(`machine b restored the run without its pause: ${JSON.stringify(restored)}`);

  // both offline: every connection to the plane is reset
  const proxies = await Promise.all([new FaultProxy(o.plane.url).start(), new FaultProxy(o.plane.url).start()]);
  for (const p of proxies) p.rule = () => 'reset';
  const [ra] = await Promise.all([
    run('resume', dbs.a, proxies[0].url, { approver: 'machine-a' }),
    run('resume', dbs.b, proxies[1].url, { approver: 'machine-b', fault: `${point}:${hits}` }),
  ]);
  await Promise.all(proxies.map((p) => p.close()));
  if (ra && !(ra.claimOffline === 1 && (ra.pendingRows as number) > 0))
    violations.push(`machine a did not resume offline: ${JSON.stringify(ra)}`);
  if (!killed) violations.push(`machine b was not killed at ${point}:${hits}`);
  if (violations.length) return result();

  // back online, A first: drain, catch-up restore, read every row; then B
  const ca = await run('catchup', dbs.a, o.plane.url);
  const cb = await run('catchup', dbs.b, o.plane.url);
  if (!ca || !cb) return result();

  const stores = { a: new SqliteCheckpointer({ path: dbs.a }), b: new SqliteCheckpointer({ path: dbs.b }) };
  const third = new SqliteCheckpointer({ path: `${o.dir}/${o.trial}-c.db` });
  try {
    const local = { a: await stores.a.list(id), b: await stores.b.list(id) };
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id).join();
    // the branches share rows up to the pause and differ after it; B's is the answered row alone
    const pauseSeq = local.a.findIndex((r) => r.step === 'hitl_pause');
    const branch = pauseSeq + 1;
    if (
      pauseSeq < 0 ||
      local.b[pauseSeq]?.id !== local.a[pauseSeq].id ||
      !local.b[branch] ||
      local.b[branch].id === local.a[branch]?.id ||
      local.b.length !== branch + 1 ||
      local.a.length <= branch + 1
    ) {
      violations.push(
        `the machines do not hold two branches from one pause, B's shorter (or one grafted the other's rows): a ${ids(local.a)} / b ${ids(local.b)}`,
      );
    }
    if (pauseSeq < 0 || !local.a[branch] || !local.b[branch]) return result();
    const writerA = local.a[branch].writerId;
    const writerB = local.b[branch].writerId;
    const remote = await planeRowsFull(o.plane.url, o.key, id);
    if (!remote) violations.push(`${id} is not on the plane`);
    else {
      if (ids(remote) !== ids(local.a))
        violations.push(
          `the plane does not hold A's branch: plane ${remote.map((r) => `${r.seq}:${r.writerId}`).join()}`,
        );
      try {
        decodeChain(remote);
      } catch (e) {
        violations.push(`a plane row of ${id} does not decode: ${(e as Error).message}`);
      }
    }
    const get = async (path: string) =>
      (await fetch(`${o.plane.url}${path}`, { headers: { authorization: `Bearer ${o.key}` } })).json();
    const conflicts = (
      (await get('/v1/conflicts')) as {
        items: { executionId: string; winnerWriterId: string; loserWriterId: string }[];
      }
    ).items.filter((c) => c.executionId === id);
    if (!(conflicts.length === 1 && conflicts[0].winnerWriterId === writerA && conflicts[0].loserWriterId === writerB))
      violations.push(`the plane does not show B's claim as the conflict: ${JSON.stringify(conflicts)}`);
    // B's refused row is another branch, not a gap in the plane's copy
    const summary = (await get(`/v1/executions/${encodeURIComponent(id)}`)) as {
      execution: { complete: boolean; status: string };
      holes: unknown[];
    };
    if (!(summary.execution.complete && summary.execution.status === 'completed' && summary.holes.length === 0))
      violations.push(`the plane's summary of ${id}: ${JSON.stringify(summary)}`);
    // each store keeps its own branch whole and readable; B's catch-up says diverged at its answered row, A's says nothing
    for (const [m, c] of [
      ['a', ca],
      ['b', cb],
    ] as const) {
      if ((c.unreadable as string[]).length)
        violations.push(`machine ${m}: rows do not read: ${(c.unreadable as string[]).join('; ')}`);
      const restore = c.restore as {
        error?: { code: string; message: string };
        diverged?: { executionId: string; seq: number; localId: string | null }[];
        inserted?: number;
      };
      if (restore.error) {
        violations.push(`machine ${m}: catch-up restore failed: ${restore.error.code} ${restore.error.message}`);
        continue;
      }
      if (restore.inserted !== 0) violations.push(`machine ${m}: catch-up restore wrote ${restore.inserted} rows`);
      const diverged = JSON.stringify(restore.diverged);
      if (
        m === 'b' &&
        diverged !==
          JSON.stringify([
            {
              executionId: id,
              seq: branch,
              reason: 'seq_taken',
              localId: local.b[branch].id,
              incomingId: local.a[branch].id,
            },
          ])
      ) {
        violations.push(`machine b did not report ${id} diverged at seq ${branch}: ${JSON.stringify(restore)}`);
      }
      if (m === 'a' && diverged !== '[]') violations.push(`machine a reported divergence: ${JSON.stringify(restore)}`);
      if (local[m].some((r) => r.seq >= branch && r.writerId !== (m === 'a' ? writerA : writerB)))
        violations.push(`machine ${m} grafted the other machine's rows`);
    }
    // a third, fresh machine restores A's branch, verified, and reads A's answer
    try {
      const r = await restoreFromPlane(third, id, { url: o.plane.url, apiKey: o.key });
      if (r.inserted !== local.a.length || r.diverged.length)
        violations.push(`restore onto a fresh store: ${JSON.stringify(r)}`);
      const rows = await third.list(id);
      if (ids(rows) !== ids(local.a)) violations.push(`the fresh store does not hold A's branch`);
      let state = '';
      for (const row of rows) state += JSON.stringify(await third.readState(row));
      if (!state.includes('machine-a') || state.includes('machine-b'))
        violations.push(`the fresh store does not read A's answer alone`);
    } catch (e) {
      violations.push(`restore onto a fresh store failed: ${(e as { code?: string }).code} ${(e as Error).message}`);
    }
    // A charged once; B died before its tool ran
    const charges = ledger.charges().filter((c) => c.order === id).length;
    if (charges !== 1) violations.push(`${charges} charges, expected 1`);
    for (const s of [stores.a, stores.b, third]) {
      const integrity = s.integrityCheck();
      if (integrity !== 'ok') violations.push(`integrity_check: ${integrity}`);
    }
  } finally {
    await Promise.all([stores.a.close(), stores.b.close(), third.close()]);
  }
  return result();
}

async function planeRowsFull(url: string, key: string, executionId: string): Promise<Checkpoint[] | null> {
  const rows: Checkpoint[] = [];
  let cursor: string | null = null;
  do {
    const res = await fetch(
      `${url}/v1/executions/${encodeURIComponent(executionId)}/rows?limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    if (res.status === 404) return null;
    const body = (await res.json()) as { items: Checkpoint[]; nextCursor: string | null };
    rows.push(...body.items);
    cursor = body.nextCursor;
  } while (cursor);
  return rows.sort((x, y) => x.seq - y.seq);
}
