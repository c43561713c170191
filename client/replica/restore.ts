/**
 * Restore a run from the plane onto a machine that never ran it: the whole
 * bundle (rows paged by seq up to the `upTo` the first page fixed, the open
 * pause and idempotency entries read with it), verified, then written in one
 * local transaction, marked synced, never overwriting a local row.
 *
 * Verified before anything is written: seq continuous from 0 to `upTo`, every
 * row of the execution asked for, the snapshot chain decodes, the pause (if
 * any) is the newest row's. Otherwise `RESTORE_UNVERIFIED` naming each problem,
 * and nothing is imported. A run the plane knows is incomplete is refused by
 * the plane (`RUN_INCOMPLETE`, naming the missing seqs and why). Either way,
 * and when any page fails to arrive whole (a cut or stalled connection:
 * PLANE_ERROR at the request deadline), the store is left as it was.
 *
 * Into a store that already holds rows of the run: rows already here are
 * skipped; at the first seq where the local history differs (a branch of its
 * own) the run is reported in `diverged` and nothing of the plane's branch
 * after it is written, neither its rows nor its pause nor that pause's
 * decision (stored only where the pause is open once the rows are in).
 */
import type { Dispatcher } from 'undici';
import { decodeChain } from '../../shared/codec.js';
import { ErrorCode, issueProblems, WaymarkError } from '../../shared/errors.js';
import { RestorePage } from '../../shared/protocol.js';
import {
  ExecutionId,
  type Checkpoint,
  type Decision,
  type IdempotencyEntry,
  type PendingInterrupt,
} from '../../shared/rows.js';
import type { Checkpointer, ImportResult } from '../checkpointer.js';
import { PlaneHttp } from './http.js';
import { apiKeyProblem, refuse, shown, urlProblem } from '../../support/validate.js';

/** Options of `restoreFromPlane`: the plane, and how the bundle is fetched. */
export interface RestoreOptions {
  /** The plane's http(s) URL, a path prefix allowed. */
  url: string;
  /** The plane's API key; it needs the `read` scope. */
  apiKey: string;
  /** The undici dispatcher for the requests to the plane; default undici's global one. */
  dispatcher?: Dispatcher;
  /** Rows per page of the restore. Default 500. */
  pageSize?: number;
  /** Deadline of each page's request, in ms. Default 30 000. */
  timeoutMs?: number;
  /** Called after each page; restore waits for a returned promise before it asks for the next page. */
  onProgress?: (p: { rows: number; totalRows: number }) => unknown;
  /** The writer the restore is recorded for at the plane (its change feed then carries this run). Default the store's writer id. */
  writerId?: string;
  /** Called once the whole bundle arrived and was verified, before anything is written (a copy replaced by the plane's drops its own here). */
  beforeImport?: () => Promise<void>;
}

/**
 * Restore one run from the plane into `store`: the whole bundle, verified (seq continuous from 0, every row of this
 * run, the snapshot chain decodes, the pause is the newest row's), then written in one transaction and marked synced.
 * A local row is never overwritten: where the local history differs, the run is reported in `diverged` and nothing
 * of the plane's branch after that point is written. Resolves with what was imported, the run's row count at the
 * plane (`totalRows`), and whether the pause's decision was imported.
 * Throws NOT_ON_PLANE, RUN_INCOMPLETE, RESTORE_UNVERIFIED, UNAUTHORIZED/FORBIDDEN or PLANE_ERROR, importing nothing.
 */
export async function restoreFromPlane(
  store: Checkpointer,
  executionId: string,
  o: RestoreOptions,
): Promise<ImportResult & { totalRows: number; decisionImported: boolean }> {
  // a forgotten id (`process.argv[2]` unset) asked the plane for a run named 'undefined'
  const id = ExecutionId.safeParse(executionId);
  const problems = id.success ? [] : issueProblems(id.error, 'executionId');
  // other names are let through: one config object may serve connectPlane and this (see replicaOptionProblems)
  if (typeof o !== 'object' || o === null)
    problems.push(`options: required, an object with url and apiKey (got ${shown(o)})`);
  if (typeof o === 'object' && o !== null)
    for (const p of [urlProblem(o.url), apiKeyProblem(o.apiKey)]) if (p) problems.push(p);
  refuse('restoreFromPlane', problems, 'nothing was imported');
  const http = new PlaneHttp(o.url, { dispatcher: o.dispatcher, connections: 1 });
  try {
    const rows: Checkpoint[] = [];
    let pending: PendingInterrupt | null = null;
    let decision: Decision | null = null;
    const idempotency: IdempotencyEntry[] = [];
    let totalRows = 0;
    let upTo = -1;
    let cursor: string | null = null;
    let first = true;
    do {
      // idempotency entries after the rows, paged like them (a plane before 2026-12 ignores it and sends them all first)
      const q = new URLSearchParams({
        limit: String(o.pageSize ?? 500),
        idempotency: 'paged',
        // the first page names this store's writer: the plane then sends it the run's changes (its writer feed)
        ...(cursor ? { cursor } : { writerId: o.writerId ?? store.writerId }),
      });
      const res = await http
        .request('GET', `/v1/executions/${encodeURIComponent(executionId)}/restore?${q}`, {
          apiKey: o.apiKey,
          timeoutMs: o.timeoutMs ?? 30_000,
        })
        .catch((e: unknown) => {
          throw new WaymarkError(
            ErrorCode.PLANE_ERROR,
            `cannot reach the plane at ${o.url} to restore '${executionId}': ${(e as Error).message}; nothing was imported`,
            {
              cause: e,
              details: { executionId },
            },
          );
        });
      if (res.status === 404) {
        throw new WaymarkError(ErrorCode.NOT_ON_PLANE, `execution '${executionId}' is not on the plane at ${o.url}`, {
          details: { executionId },
        });
      }
      if (res.status === 409 && (res.body as { error?: { code?: string } })?.error?.code === ErrorCode.RUN_INCOMPLETE) {
        const err = (res.body as { error: { message: string; details?: Record<string, unknown> } }).error;
        throw new WaymarkError(ErrorCode.RUN_INCOMPLETE, err.message, { details: { executionId, ...err.details } });
      }
      if (res.status !== 200) {
        const error = (res.body as { error?: { code?: string; message?: string } })?.error;
        // a refused key is said as the plane says it (UNAUTHORIZED, FORBIDDEN), as `sync now` does: not a plane fault
        const code =
          (res.status === 401 || res.status === 403) &&
          (error?.code === ErrorCode.UNAUTHORIZED || error?.code === ErrorCode.FORBIDDEN)
            ? error.code
            : ErrorCode.PLANE_ERROR;
        throw new WaymarkError(code, `restore of '${executionId}' failed: HTTP ${res.status} ${error?.message ?? ''}`, {
          details: { status: res.status },
        });
      }
      const page = RestorePage.safeParse(res.body);
      if (!page.success) {
        throw new WaymarkError(
          ErrorCode.PLANE_ERROR,
          `the plane sent a malformed restore page: ${page.error.issues[0].message}`,
        );
      }
      if (first) {
        pending = page.data.pending;
        decision = page.data.decision;
        totalRows = page.data.totalRows;
        upTo = page.data.upTo;
        first = false;
      }
      rows.push(...page.data.rows);
      idempotency.push(...page.data.idempotency);
      cursor = page.data.nextCursor;
      await o.onProgress?.({ rows: rows.length, totalRows: Math.max(totalRows, rows.length) });
    } while (cursor);
    verifyBundle(executionId, upTo, rows, pending, idempotency);
    await o.beforeImport?.();
    const result = await store.importRows({ checkpoints: rows, pending, idempotency });
    // the open pause's decision comes with it, stored as arrived from the plane (never sent back), but only where
    // that pause is now open: a store whose own branch diverged keeps its branch, and a decision for a pause of the
    // plane's branch is not one of its (the decision feed, not restore, reports such decisions)
    const open =
      pending && decision && decision.checkpointId === pending.checkpointId
        ? await store.getPendingInterrupt(executionId)
        : null;
    const decided =
      decision && open?.checkpointId === decision.checkpointId
        ? await store.recordDecision({ ...decision, source: 'plane' })
        : null;
    return { ...result, totalRows: rows.length, decisionImported: decided?.recorded === true };
  } finally {
    await http.close();
  }
}

/** The client's own check of a restore bundle before it writes anything; throws RESTORE_UNVERIFIED naming every problem. */
function verifyBundle(
  executionId: string,
  upTo: number,
  rows: Checkpoint[],
  pending: PendingInterrupt | null,
  idempotency: IdempotencyEntry[],
): void {
  const problems: string[] = [];
  const missing: number[] = [];
  const bySeq = new Map<number, Checkpoint>();
  for (const r of rows) {
    if (r.executionId !== executionId) problems.push(`row ${r.id} belongs to execution '${r.executionId}'`);
    else if (r.seq > upTo) problems.push(`row ${r.id} at seq ${r.seq} is beyond the snapshot's seq ${upTo}`);
    else if (bySeq.has(r.seq)) problems.push(`seq ${r.seq} was sent twice`);
    else bySeq.set(r.seq, r);
  }
  for (let seq = 0; seq <= upTo; seq++) if (!bySeq.has(seq)) missing.push(seq);
  if (missing.length) problems.push(`seq ${ranges(missing)} missing (the rows must run from 0 to ${upTo})`);
  if (upTo < 0) problems.push('the plane sent no rows');
  const chain = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  if (!missing.length && chain.length) {
    try {
      decodeChain(chain);
    } catch (e) {
      problems.push(`the snapshot chain does not decode: ${(e as Error).message}`);
    }
  }
  const newest = bySeq.get(upTo);
  if (pending) {
    if (pending.executionId !== executionId) problems.push(`the pause belongs to execution '${pending.executionId}'`);
    else if (!newest || pending.checkpointId !== newest.id)
      problems.push(
        `the pause is for row ${pending.checkpointId}, not the newest row (seq ${upTo}${newest ? `, ${newest.id}` : ''})`,
      );
  }
  const keys = new Set<string>();
  for (const e of idempotency) {
    if (e.executionId !== executionId)
      problems.push(`idempotency entry '${e.key}' belongs to execution '${e.executionId}'`);
    else if (keys.has(e.key)) problems.push(`idempotency entry '${e.key}' was sent twice`);
    keys.add(e.key);
  }
  if (problems.length) {
    throw new WaymarkError(
      ErrorCode.RESTORE_UNVERIFIED,
      `restore of '${executionId}' was not verified, nothing was imported: ${problems.join('; ')}`,
      {
        details: { executionId, upTo, missingSeqs: missing, problems },
      },
    );
  }
}

/** 3,4,5,9 → "3–5, 9" */
function ranges(seqs: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < seqs.length; ) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j] + 1) j++;
    out.push(i === j ? `${seqs[i]}` : `${seqs[i]}–${seqs[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}
