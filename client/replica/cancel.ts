/**
 * Cancel through the plane (DESIGN §5b): a run the plane holds is cancelled
 * there, as a change of its owner to "nobody, cancelled", so the machine
 * running it stops at its next step whichever machine asked. The plane writes
 * the cancel marker; this store then takes it (a restore) and says cancelled
 * too. A copy here that went further than the plane's (rows never sent) keeps
 * its rows and gets a cancel marker of its own: one status everywhere.
 */
import type { Dispatcher } from 'undici';
import { ErrorCode, isErrorCode, WaymarkError } from '../../shared/errors.js';
import { CancelResponse } from '../../shared/protocol.js';
import type { Checkpointer } from '../checkpointer.js';
import { isCancelMarker } from '../store/cancel.js';
import { PlaneHttp } from './http.js';
import { foreignBody } from './plane-calls.js';
import { restoreFromPlane } from './restore.js';

/** Options of `Replica.cancel`: the reason. */
export interface PlaneCancelOptions {
  /** Why: kept in the plane's cancel marker, shown by runs and the inspector. */
  reason?: string;
}

/** Options of `cancelThroughPlane`: the plane, the reason, and the request's deadline. */
export interface CancelThroughPlaneOptions extends PlaneCancelOptions {
  /** The plane's http(s) URL, a path prefix allowed. */
  url: string;
  /** The plane's API key; it needs the `cancel` scope (and `read` for this store's copy to follow). */
  apiKey: string;
  /** The undici dispatcher for the requests to the plane; default undici's global one. */
  dispatcher?: Dispatcher;
  /** Deadline of each request to the plane, in ms. Default 30 000. */
  timeoutMs?: number;
}

/** What a cancel through the plane did there, and here. */
export interface PlaneCancelResult extends CancelResponse {
  /**
   * How this store came to say cancelled: the plane's marker restored here, a
   * marker of its own (its copy went further than the plane's), not at all (it
   * holds no rows of the run), or not yet (`unknown`: the plane's copy could
   * not be read, `localProblem` says why; a key needs the read scope too).
   */
  local: 'restored' | 'marked' | 'absent' | 'unknown';
  localProblem?: string;
}

/**
 * Cancel `executionId` at the plane, then make `store`'s copy say cancelled.
 * Throws EXECUTION_NOT_FOUND (not on the plane), ALREADY_FINISHED (it
 * completed), the plane's code for a refused key or scope (UNAUTHORIZED,
 * FORBIDDEN: the key needs the `cancel` scope), or PLANE_ERROR (no answer).
 */
export async function cancelThroughPlane(
  store: Checkpointer,
  executionId: string,
  o: CancelThroughPlaneOptions,
): Promise<PlaneCancelResult> {
  const http = new PlaneHttp(o.url, { dispatcher: o.dispatcher });
  let answer: CancelResponse;
  try {
    const res = await http
      .request('POST', `/v1/executions/${encodeURIComponent(executionId)}/cancel`, {
        apiKey: o.apiKey,
        json: o.reason ? { reason: o.reason } : {},
        timeoutMs: o.timeoutMs ?? 30_000,
      })
      .catch((e: unknown) => {
        throw new WaymarkError(
          ErrorCode.PLANE_ERROR,
          `cannot reach the plane to cancel '${executionId}': ${(e as Error).message}; nothing was cancelled`,
          { cause: e, details: { executionId } },
        );
      });
    const parsed = CancelResponse.safeParse(res.body);
    if (res.status === 200 && parsed.success) answer = parsed.data;
    else {
      const error = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
      const code = isErrorCode(error?.code) ? error.code : ErrorCode.PLANE_ERROR;
      throw new WaymarkError(
        code,
        `the plane did not cancel '${executionId}': ${res.status} ${error?.message ?? foreignBody(res.status, res.body)}`,
        {
          details: { executionId, status: res.status, planeCode: error?.code ?? null },
        },
      );
    }
  } finally {
    await http.close();
  }
  return { ...answer, ...(await adoptCancel(store, executionId, { ...o, reason: o.reason ?? null })) };
}

/**
 * Make this store's copy of a run the plane cancelled say so: restore the
 * plane's marker; where the local copy went further (diverged), cancel it
 * here too. A store with no rows of the run is left alone (nothing to say);
 * one that cannot read the plane's copy (a key without the read scope, the
 * plane gone) is left as it is, and says why (`unknown`), never marked on a guess.
 */
export async function adoptCancel(
  store: Checkpointer,
  executionId: string,
  o: { url: string; apiKey: string; reason: string | null; dispatcher?: Dispatcher; timeoutMs?: number },
): Promise<{ local: 'restored' | 'marked' | 'absent' | 'unknown'; localProblem?: string }> {
  if (!(await store.latest(executionId))) return { local: 'absent' };
  const r = await restoreFromPlane(store, executionId, {
    url: o.url,
    apiKey: o.apiKey,
    dispatcher: o.dispatcher,
    timeoutMs: o.timeoutMs,
  }).catch((e: Error) => e);
  if (r instanceof Error)
    return { local: 'unknown', localProblem: `${(r as { code?: string }).code ?? 'ERROR'}: ${r.message}` };
  if (isCancelMarker(await store.latest(executionId))) return { local: 'restored' };
  const c = await store.cancel(executionId, { reason: o.reason ?? 'cancelled at the plane' });
  return { local: c.alreadyCancelled ? 'restored' : 'marked' };
}
