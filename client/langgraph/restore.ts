/**
 * Restore a whole LangGraph thread from the plane: its root execution (named
 * by the thread id) and every subgraph namespace (`<thread_id>|<ns>`), each
 * with `restoreFromPlane` (verified, one local transaction per execution).
 * A thread paused inside a subgraph needs the subgraph's checkpoints to
 * resume where it stopped, not re-run the subgraph from its start.
 */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Checkpointer, ImportResult } from '../checkpointer.js';
import { PlaneHttp } from '../replica/http.js';
import { restoreFromPlane, type RestoreOptions } from '../replica/restore.js';
import { NS_SEPARATOR, isRowRef } from './mapping.js';

/** What `restoreThread` imported, per execution of the thread. */
export interface ThreadRestoreResult {
  /** Per execution restored: the root first, then each namespace. */
  executions: (ImportResult & { executionId: string; totalRows: number })[];
}

/**
 * The plane's executions of a thread: the root and its namespaces (prefix
 * search, cursor paged). An execution `<thread>|…` is kept only when its first
 * row is a LangGraph row of this thread: a thread whose own id starts with
 * `<thread>|` is another thread, never restored with this one.
 */
export async function threadExecutionsOnPlane(threadId: string, o: RestoreOptions): Promise<string[]> {
  const http = new PlaneHttp(o.url, { dispatcher: o.dispatcher, connections: 1 });
  const found: string[] = [];
  try {
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ q: threadId, limit: String(o.pageSize ?? 500), ...(cursor ? { cursor } : {}) });
      const res = await http.request('GET', `/v1/executions?${q}`, {
        apiKey: o.apiKey,
        timeoutMs: o.timeoutMs ?? 30_000,
      });
      if (res.status !== 200) {
        const msg = (res.body as { error?: { message?: string } })?.error?.message ?? '';
        throw new WaymarkError(
          ErrorCode.PLANE_ERROR,
          `listing thread '${threadId}' failed: HTTP ${res.status} ${msg}`,
          { details: { status: res.status } },
        );
      }
      const page = res.body as { items: { executionId: string }[]; nextCursor: string | null };
      for (const e of page.items)
        if (e.executionId === threadId || e.executionId.startsWith(`${threadId}${NS_SEPARATOR}`))
          found.push(e.executionId);
      cursor = page.nextCursor;
    } while (cursor);
    // `<thread>|x` is a namespace of this thread or another thread whose id holds `|`: its first row names its thread
    const own: string[] = [];
    for (const executionId of found) {
      const owner = executionId === threadId ? threadId : await threadOf(http, executionId, o);
      // no first row to read (deleted meanwhile, or a hole): restoreFromPlane says what is wrong with it
      if (owner === undefined || owner === threadId) own.push(executionId);
    }
    found.length = 0;
    found.push(...own);
  } finally {
    await http.close();
  }
  return found.sort((a, b) => (a === threadId ? -1 : b === threadId ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/** The LangGraph thread named by the first row of a plane execution: null for a row of no thread, undefined when there is no row to read. */
async function threadOf(http: PlaneHttp, executionId: string, o: RestoreOptions): Promise<string | null | undefined> {
  const res = await http.request('GET', `/v1/executions/${encodeURIComponent(executionId)}/rows?limit=1`, {
    apiKey: o.apiKey,
    timeoutMs: o.timeoutMs ?? 30_000,
  });
  if (res.status === 404) return undefined;
  if (res.status !== 200) {
    const msg = (res.body as { error?: { message?: string } })?.error?.message ?? '';
    throw new WaymarkError(
      ErrorCode.PLANE_ERROR,
      `reading execution '${executionId}' failed: HTTP ${res.status} ${msg}`,
      { details: { status: res.status, executionId } },
    );
  }
  const first = (res.body as { items: { nodeInput?: unknown }[] }).items[0];
  if (!first) return undefined;
  return isRowRef(first.nodeInput) ? first.nodeInput.thread_id : null;
}

/**
 * Restore every execution of LangGraph thread `threadId` from the plane into
 * `store`. Throws `NOT_ON_PLANE` when the plane holds none of them. Each
 * execution is restored on its own (see `restoreFromPlane`); a failure stops
 * the restore and names the execution, keeping what was already imported.
 */
export async function restoreThread(
  store: Checkpointer,
  threadId: string,
  o: RestoreOptions,
): Promise<ThreadRestoreResult> {
  const ids = await threadExecutionsOnPlane(threadId, o);
  if (ids.length === 0) {
    throw new WaymarkError(ErrorCode.NOT_ON_PLANE, `thread '${threadId}' is not on the plane at ${o.url}`, {
      details: { threadId },
    });
  }
  const executions: ThreadRestoreResult['executions'] = [];
  for (const executionId of ids) executions.push({ executionId, ...(await restoreFromPlane(store, executionId, o)) });
  return { executions };
}
