/**
 * Restore a run from the plane onto a machine that never ran it: the whole
 * bundle (rows paged by seq, the open pause, the idempotency entries), written
 * in one local transaction, marked synced, never overwriting a local row.
 */
import type { Dispatcher } from 'undici';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { RestorePage } from '../../shared/protocol.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type { Checkpointer, ImportResult } from '../checkpointer.js';
import { PlaneHttp } from './http.js';

export interface RestoreOptions {
  url: string;
  apiKey: string;
  dispatcher?: Dispatcher;
  pageSize?: number;
  timeoutMs?: number;
  onProgress?: (p: { rows: number; totalRows: number }) => void;
}

export async function restoreFromPlane(store: Checkpointer, executionId: string, o: RestoreOptions): Promise<ImportResult & { totalRows: number }> {
  const http = new PlaneHttp(o.url, { dispatcher: o.dispatcher, connections: 1 });
  try {
    const rows: Checkpoint[] = [];
    let pending: PendingInterrupt | null = null;
    let idempotency: IdempotencyEntry[] = [];
    let totalRows = 0;
    let cursor: string | null = null;
    let first = true;
    do {
      const q = new URLSearchParams({ limit: String(o.pageSize ?? 500), ...(cursor ? { cursor } : {}) });
      const res = await http.request('GET', `/v1/executions/${encodeURIComponent(executionId)}/restore?${q}`, {
        apiKey: o.apiKey,
        timeoutMs: o.timeoutMs ?? 30_000,
      });
      if (res.status === 404) {
        throw new WaymarkError(ErrorCode.NOT_ON_PLANE, `execution '${executionId}' is not on the plane at ${o.url}`, { details: { executionId } });
      }
      if (res.status !== 200) {
        const msg = (res.body as { error?: { message?: string } })?.error?.message ?? '';
        throw new WaymarkError(ErrorCode.PLANE_ERROR, `restore of '${executionId}' failed: HTTP ${res.status} ${msg}`, { details: { status: res.status } });
      }
      const page = RestorePage.safeParse(res.body);
      if (!page.success) {
        throw new WaymarkError(ErrorCode.PLANE_ERROR, `the plane sent a malformed restore page: ${page.error.issues[0].message}`);
      }
      if (first) {
        pending = page.data.pending;
        idempotency = page.data.idempotency;
        totalRows = page.data.totalRows;
        first = false;
      }
      rows.push(...page.data.rows);
      cursor = page.data.nextCursor;
      o.onProgress?.({ rows: rows.length, totalRows: Math.max(totalRows, rows.length) });
    } while (cursor);
    const result = await store.importRows({ checkpoints: rows, pending, idempotency });
    return { ...result, totalRows: rows.length };
  } finally {
    await http.close();
  }
}
