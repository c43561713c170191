/**
 * A copy that lost a run takes the plane's branch in place of its own.
 */
import { ErrorCode } from '../../shared/errors.js';
import { utf8Bytes } from '../../shared/json.js';
import { LIMITS } from '../../shared/limits.js';
import type { IdempotencyEntry } from '../../shared/rows.js';
import type { LostAtPlane } from '../../support/run-words.js';
import type { Checkpointer, QuarantinedEntry } from '../checkpointer.js';
import type { LeaseAsk, PlaneLease, PlaneTakeover } from './plane-calls.js';
import type { FlushOptions, FlushResult } from './replica-types.js';
import { planeRefusal } from './refusal.js';

/**
 * Runs this store lost at the plane, each with how (`LostAtPlane`): runs
 * whose newest row here is one the plane refused for its branch, as
 * `taken_over` (taken over, cancelled there, or a branch refused) or by its
 * seq (`seq_conflict`: another machine's branch holds that seq, as after two
 * machines resumed one pause; the plane fences this writer there too). A run
 * whose copy since became the plane's again (adopted, or caught up) is not
 * listed, whatever refusals its outbox still remembers.
 *
 * Reads the whole quarantine, then the refused rows of each such run: call
 * it once per listing or page; for one run, runLostAtPlane.
 */
export async function lostAtPlane(store: Checkpointer): Promise<Map<string, LostAtPlane>> {
  return new Map([...(await lost(store))].map(([id, l]) => [id, { fromSeq: l.fromSeq, reason: l.reason }]));
}

/** Runs this store lost at the plane (see lostAtPlane), each with the plane's reason for refusing its newest row here. */
export async function lostRuns(store: Checkpointer): Promise<Map<string, string>> {
  return new Map([...(await lost(store))].map(([id, l]) => [id, l.newest]));
}

/**
 * lostAtPlane for one run: null while the plane keeps this store's copy of it.
 * Reads only the run's refusals (by its rows' ids) and, when its newest row
 * was refused, its refused rows: for a check per run or per decision.
 */
export async function runLostAtPlane(store: Checkpointer, executionId: string): Promise<LostAtPlane | null> {
  const l = await lostRun(store, executionId, async (ids) => branchRefusals(await store.listQuarantined({ ids })));
  return l && { fromSeq: l.fromSeq, reason: l.reason };
}

type Refusal = { code: string; reason: string };

/** lostAtPlane, with the reason of each run's newest row (`newest`; a `taken_over` one without its code). */
async function lost(store: Checkpointer): Promise<Map<string, LostAtPlane & { newest: string }>> {
  const refused = new Map<string, Map<string, Refusal>>();
  let after: string | undefined;
  for (;;) {
    const page = await store.listQuarantined({ afterId: after, limit: 500 });
    if (!page.length) break;
    for (const q of page) {
      const r = branchRefusal(q);
      if (!r) continue;
      const rows = refused.get(q.executionId) ?? new Map<string, Refusal>();
      rows.set(q.id, r);
      refused.set(q.executionId, rows);
    }
    after = page[page.length - 1].id;
  }
  const out = new Map<string, LostAtPlane & { newest: string }>();
  for (const [executionId, rows] of refused) {
    const l = await lostRun(
      store,
      executionId,
      async (ids) => new Map(ids.flatMap((id) => (rows.has(id) ? [[id, rows.get(id)!] as const] : []))),
    );
    if (l) out.set(executionId, l);
  }
  return out;
}

/** A quarantined row refused for the plane's branch of its run: taken over (or cancelled there, or a branch refused), or by seq. */
function branchRefusal(q: QuarantinedEntry): Refusal | null {
  const r = planeRefusal(q.reason);
  return q.kind === 'checkpoint' && (r?.code === 'taken_over' || r?.code === 'seq_conflict') ? r : null;
}

function branchRefusals(page: QuarantinedEntry[]): Map<string, Refusal> {
  return new Map(page.flatMap((q) => (branchRefusal(q) ? [[q.id, branchRefusal(q)!] as const] : [])));
}

/** How one run is lost at the plane, or null: its newest row is not refused; `refusedOf` says which of some rows were. */
async function lostRun(
  store: Checkpointer,
  executionId: string,
  refusedOf: (ids: string[]) => Promise<Map<string, Refusal>>,
): Promise<(LostAtPlane & { newest: string }) | null> {
  const newest = await store.latest(executionId);
  const newestWhy = newest && (await refusedOf([newest.id])).get(newest.id);
  if (!newest || !newestWhy) return null;
  // the refused rows that end the run here, newest first: the first of them is where the plane's branch went another way
  let first = { seq: newest.seq, why: newestWhy };
  for (let before = newest.seq; before > 0; ) {
    const page = await store.list(executionId, { order: 'desc', beforeSeq: before, limit: 500 });
    const why = await refusedOf(page.map((r) => r.id));
    const kept = page.findIndex((r) => !why.has(r.id));
    const tail = kept === -1 ? page : page.slice(0, kept);
    if (tail.length) first = { seq: tail[tail.length - 1].seq, why: why.get(tail[tail.length - 1].id)! };
    if (kept !== -1 || page.length < 500) break;
    before = page[page.length - 1].seq;
  }
  const said = (r: Refusal) => `${r.code}: ${r.reason}`;
  return {
    fromSeq: first.seq,
    reason: said(first.why),
    newest: newestWhy.code === 'taken_over' ? newestWhy.reason : said(newestWhy),
  };
}

/** The run's idempotency keys this store holds, when a takeover request can carry them all (else undefined: not checked). */
export async function takeoverKeys(store: Checkpointer, executionId: string): Promise<string[] | undefined> {
  const list = (await store.listIdempotent(executionId)).map((e) => e.key);
  return list.length <= LIMITS.takeoverKeys && utf8Bytes(JSON.stringify(list)) <= LIMITS.takeoverKeysBytes
    ? list
    : undefined;
}

/**
 * Replace this store's copy of a run with the plane's, keeping every effect
 * it recorded. For a copy that ran on after it lost the run (the plane
 * refused its rows past the takeover), once nobody holds the run: without
 * this, the copy could never take the run, and a run whose winner stopped
 * too would stay unfinished for the whole fleet.
 *
 * The plane's copy is fetched and verified first; only then are this store's
 * rows of the run dropped (the plane refused those past the fence: they are
 * no run's history) and the plane's written. Its idempotency entries are
 * kept: sent first, and put back after the plane's (where both recorded one
 * key, the plane's stands), so an effect it made is never made again by
 * whoever runs the plane's branch. Returns false, changing nothing, while a
 * runner here holds the run or anything of this store is still unsent;
 * throws, changing nothing, when the plane's copy cannot be had.
 */
export async function adoptPlaneBranch(
  store: Checkpointer,
  executionId: string,
  plane: {
    flush: (o: FlushOptions) => Promise<FlushResult>;
    /** Restore the run from the plane, calling `beforeImport` once its copy is verified and before writing it. */
    restore: (beforeImport: () => Promise<void>) => Promise<unknown>;
  },
  o: { timeoutMs?: number } = {},
): Promise<boolean> {
  if ((await store.getLease(executionId))?.live) return false;
  if ((await plane.flush({ timeoutMs: o.timeoutMs })).pendingRows > 0) return false;
  let effects: IdempotencyEntry[] | null = null;
  try {
    await plane.restore(async () => {
      const mine = await store.listIdempotent(executionId);
      await store.deleteExecution(executionId, { localOnly: true });
      effects = mine;
    });
  } finally {
    // the entries only this store holds, after the plane's (or alone, if writing the plane's copy failed)
    if (effects) await store.importRows({ checkpoints: [], pending: null, idempotency: effects });
  }
  return true;
}

/**
 * For each run this store lost at the plane (`lostRuns`) that nobody holds
 * now, take the plane's branch in place of this store's (adoptPlaneBranch):
 * a copy that ran on, even to its end, after losing the run would otherwise
 * never see the run again, and a run whose winner stopped too would stay
 * unfinished. The plane decides: it is asked to let this copy take the run
 * over, and only a refusal that says the run is free (`RUN_TAKEN_OVER` with
 * `free`) leads to an adoption (a takeover won instead, which a copy past its
 * fence is never granted, is given back at once). Only runs whose agent
 * `serves` (its root agent path; all when absent) are asked about. A run
 * whose question or adoption fails is left for the next call. Returns the ids
 * adopted.
 */
export async function adoptLostRuns(
  store: Checkpointer,
  serves: ((agentPath: string) => boolean) | undefined,
  plane: {
    takeoverAtPlane: (
      executionId: string,
      seq: number,
      a: { holder: string; ttlMs: number; idempotencyKeys?: string[]; lastId?: string },
    ) => Promise<PlaneTakeover>;
    leaseAtPlane: (executionId: string, a: LeaseAsk) => Promise<PlaneLease>;
    adoptPlaneBranch: (executionId: string) => Promise<boolean>;
  },
): Promise<string[]> {
  const adopted: string[] = [];
  for (const executionId of (await lostRuns(store)).keys()) {
    try {
      if ((await store.getLease(executionId))?.live) continue;
      const latest = await store.latest(executionId);
      if (!latest || (serves && !serves(latest.agentPath.split('/')[0]))) continue;
      const holder = `${store.writerId}#adopt`;
      const ask = { holder, ttlMs: 1, idempotencyKeys: await takeoverKeys(store, executionId), lastId: latest.id };
      const r = await plane.takeoverAtPlane(executionId, latest.seq, ask);
      if (r.outcome === 'won') {
        // given back at once (held, it would last at least the plane's takeover delay, keeping every machine out)
        await plane.leaseAtPlane(executionId, { holder, ttlMs: 1, release: true });
        continue;
      }
      const free =
        r.outcome === 'refused' &&
        r.code === ErrorCode.RUN_TAKEN_OVER &&
        (r.details as { free?: unknown }).free === true;
      if (free && (await plane.adoptPlaneBranch(executionId))) adopted.push(executionId);
    } catch {
      // unreachable plane, a copy that failed verification: this run waits for the next call
    }
  }
  return adopted;
}
