/**
 * A replica's ownership calls to the plane (PlaneClient, plane-client.ts,
 * binds them to its connection): claim a pause (connectPlane's claim guard),
 * take over a run, renew or give up a hold, give back a claim never applied
 * locally, ask where a run stands, and ping; and the run requests' calls (list,
 * read, claim, report). Each is one request as the given writer with its key.
 * Claim, takeover, lease and ping answer with an outcome and never throw,
 * telling an offline plane (no answer, 502/503/504) from one that refused; the
 * others throw PLANE_ERROR (reachPlane, unexpectedAnswer).
 */
import { z } from 'zod';
import {
  DecisionState,
  DecisionView,
  ExecutionStatus,
  type RunRequestOutcome,
  RunRequestView,
  WhoAmI,
} from '../../shared/protocol.js';
import { IdempotencyEntry } from '../../shared/rows.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { DecisionRuns } from './decision-feed.js';
import type { PlaneHttp, PlaneResponse } from './http.js';

/** Who a call is made as: the key (which setApiKey may change between calls), the writer, its store instance, the request timeout. */
export interface PlaneCaller {
  apiKey: string;
  writerId: string;
  /** The store's instance (a copied store file is another): sent with every ownership request. */
  instance?: string;
  timeoutMs: number;
}

/** Who acquires a run at the plane: the local lease holder of this acquisition and its ttl. */
export interface Acquisition {
  holder?: string;
  ttlMs?: number;
}

const ownerFields = (as: PlaneCaller, a: Acquisition) => ({
  ...(a.holder ? { holder: a.holder } : {}),
  ...(as.instance ? { instance: as.instance } : {}),
  ...(a.ttlMs ? { ttlMs: a.ttlMs } : {}),
});

/**
 * Claim a pause at the plane (see connectPlane's claim guard). Only a
 * network error, a timeout or 502/503/504 (a proxy with no plane behind it)
 * is `offline`; any other answer but 200 and 409 is `refused`: the plane is
 * up and said no (a revoked key, a missing scope, the pause not there).
 */
export async function claimAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  executionId: string,
  checkpointId: string,
  decisionId?: string,
  a: Acquisition = {},
): Promise<PlaneClaim> {
  let res: PlaneResponse;
  try {
    res = await http.request('POST', `/v1/executions/${encodeURIComponent(executionId)}/claim`, {
      apiKey: as.apiKey,
      json: { checkpointId, writerId: as.writerId, ...(decisionId ? { decisionId } : {}), ...ownerFields(as, a) },
      timeoutMs: as.timeoutMs,
    });
  } catch (e) {
    return { outcome: 'offline', reason: (e as Error).message };
  }
  if (res.status === 200) return { outcome: 'won' };
  const error = (
    res.body as {
      error?: {
        code?: string;
        message?: string;
        details?: { writerId?: string; decisionId?: string | null; applied?: boolean; closed?: string };
      };
    } | null
  )?.error;
  if (res.status === 409 && error?.code === 'ALREADY_CLAIMED') {
    // closed by a cancel of its run (or its deletion), not answered by another claim
    if (error.details?.closed === 'cancel' || error.details?.closed === 'delete')
      return { outcome: 'closed', by: error.details.closed, message: error.message ?? 'closed' };
    return {
      outcome: 'lost',
      writerId: error.details?.writerId ?? 'another writer',
      decisionId: error.details?.decisionId ?? null,
      applied: error.details?.applied ?? null,
    };
  }
  if (res.status === 409 && error?.code === ErrorCode.WRITER_COPY)
    return { outcome: 'copy', message: error.message ?? 'another store instance uses this writer id' };
  if (res.status === 409 && error?.code === ErrorCode.ALREADY_DECIDED) {
    // never a plain refusal: a caller resuming locally on a refusal would apply the losing decision
    const first = DecisionView.strip().safeParse((error.details as { decision?: unknown } | undefined)?.decision);
    return {
      outcome: 'decided',
      decision: first.success ? first.data : null,
      message: error.message ?? 'decided first on the plane',
    };
  }
  if (OFFLINE_STATUSES.has(res.status)) return { outcome: 'offline', reason: `plane answered ${res.status}` };
  return {
    outcome: 'refused',
    status: res.status,
    code: error?.code ?? null,
    message: error?.message ?? `HTTP ${res.status}`,
  };
}

/**
 * Ask the plane to let this writer take over a run that is not paused
 * (POST /v1/executions/:id/takeover), its copy here ending at `seq`. Never throws.
 */
export async function takeoverAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  executionId: string,
  seq: number,
  a: Acquisition & { idempotencyKeys?: string[]; lastId?: string } = {},
): Promise<PlaneTakeover> {
  let res: PlaneResponse;
  try {
    res = await http.request('POST', `/v1/executions/${encodeURIComponent(executionId)}/takeover`, {
      apiKey: as.apiKey,
      json: {
        writerId: as.writerId,
        seq,
        ...(a.lastId ? { lastId: a.lastId } : {}),
        ...ownerFields(as, a),
        ...(a.idempotencyKeys ? { idempotencyKeys: a.idempotencyKeys } : {}),
      },
      timeoutMs: as.timeoutMs,
    });
  } catch (e) {
    return { outcome: 'offline', reason: (e as Error).message };
  }
  if (res.status === 200)
    return { outcome: 'won', takenFrom: (res.body as { takenFrom?: string | null } | null)?.takenFrom ?? null };
  const error = (res.body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null)
    ?.error;
  if (OFFLINE_STATUSES.has(res.status)) return { outcome: 'offline', reason: `plane answered ${res.status}` };
  return {
    outcome: 'refused',
    status: res.status,
    code: error?.code ?? null,
    message: error?.message ?? `HTTP ${res.status}`,
    details: error?.details ?? {},
  };
}

/**
 * The run's owner renews its hold at the plane (its heartbeat), or gives it
 * up (`release`): POST /v1/executions/:id/lease, with the plane's record of
 * `effectKey` when it holds one. Never throws: `lost` (another
 * owns it, or it ended there), `cancelled`, `copy` (another store instance
 * under this writer id), `offline`, or `refused` (any other answer).
 */
export async function leaseAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  executionId: string,
  a: LeaseAsk,
): Promise<PlaneLease> {
  let res: PlaneResponse;
  try {
    res = await http.request('POST', `/v1/executions/${encodeURIComponent(executionId)}/lease`, {
      apiKey: as.apiKey,
      json: {
        writerId: as.writerId,
        ...ownerFields(as, a),
        holder: a.holder,
        ttlMs: a.ttlMs,
        ...(a.release ? { release: true } : {}),
        ...(a.effectKey ? { effectKey: a.effectKey } : {}),
      },
      timeoutMs: as.timeoutMs,
      // a renewal is the same holder asking again: sent again on a kept-alive connection the plane had closed (http.ts)
      sendAgainIfStale: true,
    });
  } catch (e) {
    return { outcome: 'offline', reason: (e as Error).message };
  }
  if (res.status === 200) {
    const body = res.body as { epoch?: number | null; recorded?: unknown } | null;
    // the plane's record of the asked effect, if it is one of this run's (anything else is not a record)
    const recorded = IdempotencyEntry.safeParse(body?.recorded);
    const entry =
      recorded.success && recorded.data.executionId === executionId && recorded.data.key === a.effectKey
        ? recorded.data
        : null;
    return { outcome: 'held', epoch: body?.epoch ?? null, recorded: entry };
  }
  const error = (res.body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null)
    ?.error;
  if (OFFLINE_STATUSES.has(res.status)) return { outcome: 'offline', reason: `plane answered ${res.status}` };
  const message = error?.message ?? `HTTP ${res.status}`;
  if (res.status === 409 && error?.code === ErrorCode.LEASE_LOST)
    return { outcome: 'lost', message, details: error.details ?? {} };
  if (res.status === 409 && error?.code === ErrorCode.RUN_CANCELLED) {
    const reason = error.details?.reason;
    return { outcome: 'cancelled', message, reason: typeof reason === 'string' ? reason : null };
  }
  if (res.status === 409 && error?.code === ErrorCode.WRITER_COPY) return { outcome: 'copy', message };
  return { outcome: 'refused', status: res.status, code: error?.code ?? null, message };
}

/**
 * Check the connection with one cheap authenticated call (GET /v1/whoami):
 * whether the plane answers, and what the key is there. Never throws.
 */
export async function ping(http: PlaneHttp, as: PlaneCaller): Promise<PlanePing> {
  const started = performance.now();
  let res: PlaneResponse;
  try {
    res = await http.request('GET', '/v1/whoami', { apiKey: as.apiKey, timeoutMs: as.timeoutMs });
  } catch (e) {
    return { ok: false, status: null, reason: `network: ${(e as Error).message}` };
  }
  const ms = Math.round(performance.now() - started);
  const parsed = WhoAmI.safeParse(res.body);
  if (res.status === 200 && parsed.success) return { ok: true, ...parsed.data, latencyMs: ms };
  const error = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
  const reason = error?.message
    ? `${res.status} ${error.code ?? ''}: ${error.message}`
    : foreignBody(res.status, res.body);
  return { ok: false, status: res.status, reason };
}

/** What of GET /v1/executions/:id a decision worker reads: the run's status and its pause, claim and decision there. */
const PlaneRun = z.object({
  execution: z.object({ status: ExecutionStatus }),
  pause: z
    .object({
      pending: z.object({ checkpointId: z.string() }),
      state: z.string(),
      claimedBy: z.string().nullable(),
      claim: z.object({ writerId: z.string(), state: z.enum(['held', 'applied']) }).nullable(),
      decision: z.object({ decisionId: z.string(), state: DecisionState, appliedBy: z.string().nullable() }).nullable(),
    })
    .nullable(),
});
export type PlaneRun = z.infer<typeof PlaneRun>;

/**
 * Where a run stands on the plane (GET /v1/executions/:id): its status and
 * its pause (open or claimed, by whom, with its decision's state); null when
 * the plane says it does not hold the run (404 EXECUTION_NOT_FOUND). Throws
 * PLANE_ERROR (a retry may succeed) when the plane cannot be asked, refuses,
 * or something else answers (any other 404: a proxy, a wrong path prefix).
 */
export async function runAtPlane(http: PlaneHttp, as: PlaneCaller, executionId: string): Promise<PlaneRun | null> {
  const res = await reachPlane(
    http,
    as,
    'GET',
    `/v1/executions/${encodeURIComponent(executionId)}`,
    `read '${executionId}'`,
    { details: { executionId } },
  );
  const error = (res.body as { error?: { code?: string } } | null)?.error;
  // only the plane's own word that the run is not there: a 404 from a proxy, a wrong prefix or an older plane is not
  if (res.status === 404 && error?.code === ErrorCode.EXECUTION_NOT_FOUND) return null;
  const run = PlaneRun.safeParse(res.body);
  if (res.status === 200 && run.success) return run.data;
  throw unexpectedAnswer(`the plane did not say where '${executionId}' stands`, res, { executionId });
}

/**
 * Give back a plane claim this writer holds but never applied locally (it
 * crashed or gave up between the plane claim and the local one), so another
 * writer may claim the pause. True when a claim was released. Throws
 * PLANE_ERROR when the plane cannot be reached or refuses (CLAIM_APPLIED: the
 * claim was applied, it is no longer given back).
 */
export async function releaseClaim(
  http: PlaneHttp,
  as: PlaneCaller,
  executionId: string,
  checkpointId: string,
): Promise<boolean> {
  const details = { executionId, checkpointId };
  const res = await reachPlane(
    http,
    as,
    'POST',
    `/v1/executions/${encodeURIComponent(executionId)}/claim/release`,
    `release the claim of pause ${checkpointId}`,
    { json: { checkpointId, writerId: as.writerId }, details },
  );
  if (res.status === 200) return (res.body as { released: boolean }).released;
  throw unexpectedAnswer(`the plane refused to release the claim of pause ${checkpointId}`, res, details);
}

/** An answer that is not the plane's JSON error (a proxy's page): its status and the start of its text, to say who answered. */
export function foreignBody(status: number, body: unknown): string {
  const text =
    typeof body === 'string'
      ? body
          .replace(/<[^>]*>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim()
          .slice(0, 120)
      : '';
  return text ? `HTTP ${status} (not from the plane: "${text}")` : `HTTP ${status}`;
}

/** What a ping found: the key's project and scopes, or why the plane could not be used. */
export type PlanePing =
  | ({ ok: true; latencyMs: number } & WhoAmI)
  | { ok: false; status: number | null; reason: string };

/** What the plane said to a claim. */
export type PlaneClaim =
  | { outcome: 'won' }
  | { outcome: 'lost'; writerId: string; decisionId?: string | null; applied?: boolean | null }
  /** The pause was closed without an answer: its run was cancelled or deleted on the plane. */
  | { outcome: 'closed'; by: 'cancel' | 'delete'; message: string }
  /** The pause was decided first on the plane, with another decision than the claim applied: nothing claimed. */
  | { outcome: 'decided'; decision: DecisionView | null; message: string }
  | { outcome: 'offline'; reason: string }
  /** Another store instance under this writer id holds the run (a copied store file): nothing claimed. */
  | { outcome: 'copy'; message: string }
  | { outcome: 'refused'; status: number; code: string | null; message: string };

/** A renewal or release of a hold at the plane, asking for the record of the effect about to start (`effectKey`). */
export interface LeaseAsk {
  holder: string;
  ttlMs: number;
  release?: boolean;
  effectKey?: string;
}

/** What the plane said to a renewal of a run's hold (`recorded`: its record of the asked effect, if any). */
export type PlaneLease =
  | { outcome: 'held'; epoch: number | null; recorded: IdempotencyEntry | null }
  | { outcome: 'lost'; message: string; details: Record<string, unknown> }
  | { outcome: 'cancelled'; message: string; reason: string | null }
  | { outcome: 'copy'; message: string }
  | { outcome: 'offline'; reason: string }
  | { outcome: 'refused'; status: number; code: string | null; message: string };

/** What the plane said to a takeover: `refused` carries its code (LEASE_LIVE, RUN_TAKEN_OVER, STALE_COPY, NOT_RUNNING, …). */
export type PlaneTakeover =
  | { outcome: 'won'; takenFrom: string | null }
  | { outcome: 'offline'; reason: string }
  | { outcome: 'refused'; status: number; code: string | null; message: string; details: Record<string, unknown> };

/** Answers that mean "no plane behind this address right now", not a refusal by the plane. */
const OFFLINE_STATUSES = new Set([502, 503, 504]);

/**
 * A request to the plane that throws PLANE_ERROR when it gets no answer: "cannot reach the plane to `what`" (a
 * network error, a timeout), with `details`. For the calls whose every failure is an error; the ownership calls that
 * tell an offline plane from a refusal (claim, takeover, lease, ping) catch the network error themselves.
 */
async function reachPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  method: 'GET' | 'POST',
  path: string,
  what: string,
  o: { json?: unknown; details?: Record<string, unknown> } = {},
): Promise<PlaneResponse> {
  try {
    return await http.request(method, path, {
      apiKey: as.apiKey,
      timeoutMs: as.timeoutMs,
      ...(o.json ? { json: o.json } : {}),
    });
  } catch (e) {
    throw new WaymarkError(ErrorCode.PLANE_ERROR, `cannot reach the plane to ${what}: ${(e as Error).message}`, {
      cause: e,
      ...(o.details ? { details: o.details } : {}),
    });
  }
}

/**
 * An answer other than the one a call asked for, as PLANE_ERROR: `what` (the call, in words), then the status, the
 * plane's code and message (or who else answered: foreignBody); `details` with `status` and `planeCode`.
 */
function unexpectedAnswer(what: string, res: PlaneResponse, details: Record<string, unknown>): WaymarkError {
  const error = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
  return new WaymarkError(
    ErrorCode.PLANE_ERROR,
    `${what}: ${res.status} ${error?.code ?? ''} ${error?.message ?? foreignBody(res.status, res.body)}`.trim(),
    { details: { ...details, status: res.status, planeCode: error?.code ?? null } },
  );
}

/**
 * One page of the run requests waiting for the application (GET /v1/requests?state=open), oldest first, after the
 * cursor (null: from the start); `nextCursor` null at the end. `runs` 'mine': only those of runs this writer
 * delivered rows of, restored or owns (`writerId`; a plane older than that filter lists them all, which is more,
 * never less). Throws PLANE_ERROR when the plane cannot be asked or answers otherwise; an item of another shape is
 * left out.
 */
export async function openRequestsAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  after: string | null,
  limit = 100,
  runs: DecisionRuns = 'all',
): Promise<{ items: RunRequestView[]; nextCursor: string | null }> {
  const q: string = `state=open&limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}${runs === 'mine' ? `&writerId=${encodeURIComponent(as.writerId)}` : ''}`;
  const res = await reachPlane(http, as, 'GET', `/v1/requests?${q}`, 'list run requests');
  const page = z.object({ items: z.array(z.unknown()), nextCursor: z.string().nullable() }).safeParse(res.body);
  if (res.status !== 200 || !page.success) throw unexpectedAnswer('the plane did not list run requests', res, {});
  const items: RunRequestView[] = [];
  for (const item of page.data.items) {
    const r = RunRequestView.safeParse(item);
    if (r.success) items.push(r.data);
  }
  return { items, nextCursor: page.data.nextCursor };
}

/** Take a fork request at the plane before forking (POST /v1/requests/:id/claim): won, lost (to `request.claimedBy`) or settled. */
export async function claimRequestAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  requestId: string,
): Promise<{ outcome: 'won' | 'lost' | 'settled'; request: RunRequestView }> {
  const res = await reachPlane(
    http,
    as,
    'POST',
    `/v1/requests/${encodeURIComponent(requestId)}/claim`,
    'claim a request',
    {
      json: { writerId: as.writerId, ...(as.instance ? { instance: as.instance } : {}) },
      details: { requestId },
    },
  );
  const r = z.object({ outcome: z.enum(['won', 'lost', 'settled']), request: RunRequestView }).safeParse(res.body);
  if (res.status !== 200 || !r.success)
    throw unexpectedAnswer(`the plane did not claim request ${requestId}`, res, { requestId });
  return r.data;
}

/** Report how applying a request went (POST /v1/requests/:id/outcome); the answer is the request as it stands there. */
export async function settleRequestAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  requestId: string,
  outcome: Omit<RunRequestOutcome, 'writerId'>,
): Promise<RunRequestView> {
  const res = await reachPlane(
    http,
    as,
    'POST',
    `/v1/requests/${encodeURIComponent(requestId)}/outcome`,
    'report a request',
    {
      json: { ...outcome, writerId: as.writerId, ...(as.instance ? { instance: as.instance } : {}) },
      details: { requestId },
    },
  );
  const r = RunRequestView.safeParse(res.body);
  if (res.status !== 200 || !r.success)
    throw unexpectedAnswer(`the plane did not take the outcome of request ${requestId}`, res, { requestId });
  return r.data;
}

/** One run request as the plane has it now (GET /v1/requests/:id); null when the plane does not hold it. */
export async function requestAtPlane(
  http: PlaneHttp,
  as: PlaneCaller,
  requestId: string,
): Promise<RunRequestView | null> {
  const res = await reachPlane(http, as, 'GET', `/v1/requests/${encodeURIComponent(requestId)}`, 'read a request', {
    details: { requestId },
  });
  const error = (res.body as { error?: { code?: string } } | null)?.error;
  if (res.status === 404 && error?.code === ErrorCode.REQUEST_NOT_FOUND) return null;
  const r = RunRequestView.safeParse(res.body);
  if (res.status !== 200 || !r.success)
    throw unexpectedAnswer(`the plane did not read request ${requestId}`, res, { requestId });
  return r.data;
}
