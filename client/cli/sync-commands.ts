/** `waymark sync status|now`, `waymark restore`, `waymark quarantine`: the replication side of the CLI. */
import type { Checkpointer, QuarantinedEntry } from '../checkpointer.js';
import { lostRuns } from '../replica/branch.js';
import { planeRefusal } from '../replica/refusal.js';
import { connectPlane } from '../replica/connect.js';
import { restoreFromPlane } from '../replica/restore.js';
import type { DivergenceReason } from '../store/import.js';
import { localTime, table } from '../../support/format.js';

export { localTime };

type Out = (line: string) => void;

/** A progress bar on a terminal, plain lines elsewhere (logs, CI). */
export function progress(
  label: string,
  write: (s: string) => void = (s) => process.stderr.write(s),
  tty = Boolean(process.stderr.isTTY),
) {
  let printed = 0;
  return {
    update(done: number, total: number) {
      const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
      if (tty) {
        const width = 30;
        const fill = Math.round((pct / 100) * width);
        write(
          `\r${label} [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${String(pct).padStart(3)}% ${done}/${total}`,
        );
      } else if (pct >= printed + 10 || (done === total && printed < 100)) {
        write(`${label}: ${done}/${total} (${pct}%)\n`);
        printed = pct;
      }
    },
    done() {
      if (tty) write('\n');
    },
  };
}

interface DrainNote {
  state: string;
  lastError: string | null;
  lastErrorAt?: string | null;
  lastSuccessAt?: string | null;
  lastAckAt: string | null;
  at: string;
}

/** The last error, said as current only when no successful round came after it. */
export function describeLastError(d: DrainNote | null): string {
  if (!d?.lastError) return 'none';
  const when = d.lastErrorAt ? ` at ${localTime(d.lastErrorAt)}` : '';
  const cleared = d.lastSuccessAt && (!d.lastErrorAt || d.lastSuccessAt >= d.lastErrorAt);
  return cleared ? `none since the last success (earlier: ${d.lastError}${when})` : `${d.lastError}${when}`;
}

export async function syncStatus(store: Checkpointer, out: Out, o: { json?: boolean } = {}): Promise<void> {
  const s = await store.outboxStats();
  const note = await store.getMeta('drain');
  const d = note ? (JSON.parse(note) as DrainNote) : null;
  const lost = await lostRuns(store);
  if (o.json) {
    out(JSON.stringify({ writerId: store.writerId, outbox: s, drain: d, lostRuns: Object.fromEntries(lost) }, null, 2));
    return;
  }
  out(`writer:        ${store.writerId}`);
  out(
    `backlog:       ${s.pendingCount} rows, ${s.pendingBytes} bytes${s.oldestPendingAgeMs !== null ? `, oldest waiting ${Math.round(s.oldestPendingAgeMs / 1000)} s` : ''}`,
  );
  out(`quarantined:   ${s.quarantinedCount}${s.lastQuarantineReason ? ` (last: ${s.lastQuarantineReason})` : ''}`);
  out(`last drain:    ${d ? `${d.state} at ${localTime(d.at)}` : 'never connected'}`);
  out(`last success:  ${d?.lastSuccessAt ? `${localTime(d.lastSuccessAt)} (outbox emptied)` : 'none'}`);
  out(`last ack:      ${d?.lastAckAt ? localTime(d.lastAckAt) : 'none'}`);
  out(`last error:    ${describeLastError(d)}`);
  const { incomplete, diverged } = await refusedOnPlane(store);
  const runs = (m: Map<string, number>) =>
    [...m].map(([id, n]) => `${id} (${n} row${n === 1 ? '' : 's'} refused)`).join(', ');
  out(
    `plane copy:    ${
      !d && incomplete.size === 0
        ? 'nothing sent yet (no plane connected; the backlog is kept until one is)'
        : incomplete.size === 0
          ? s.quarantinedCount
            ? 'complete (no hole: the rows the plane refused are not missing from its copy, see below)'
            : 'complete (no row refused)'
          : `INCOMPLETE for ${incomplete.size} run(s): ${runs(incomplete)}; the plane cannot restore them elsewhere; this store keeps them whole (see \`waymark quarantine\`)`
    }`,
  );
  if (diverged.size) {
    // this store cannot tell which: the plane knows (its run page, and `waymark restore`, say it)
    out(
      `refused by seq: ${diverged.size} run(s): ${runs(diverged)}; the plane holds other rows at those seqs: another machine's branch ` +
        "after a double claim (the plane's copy is whole; `waymark restore` here reports DIVERGED), or a hole (restore says RUN_INCOMPLETE)",
    );
  }
  out(
    `lost runs:     ${
      lost.size === 0
        ? 'none'
        : `${lost.size} run(s) taken over by another machine, cancelled at the plane, or run on here on a branch the plane refused; this store's later rows of them were refused: ` +
          [...lost].map(([id, why]) => `${id}: ${why}`).join('; ')
    }`,
  );
}

/**
 * Executions with a checkpoint the plane refused (quarantined here), read page
 * by page: `incomplete` when a refusal left a hole in the plane's copy (too
 * large, invalid), `diverged` when every refusal was by seq (the plane holds
 * other rows there: usually another machine's branch, whole; the plane says).
 */
export async function refusedOnPlane(
  store: Checkpointer,
): Promise<{ incomplete: Map<string, number>; diverged: Map<string, number> }> {
  const incomplete = new Map<string, number>();
  const diverged = new Map<string, number>();
  const count = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);
  let after: string | undefined;
  for (;;) {
    const page = await store.listQuarantined({ afterId: after, limit: 500 });
    if (!page.length) break;
    for (const q of page) {
      // a row refused because another machine took the run over leaves no hole there (see lostRuns)
      const code = planeRefusal(q.reason)?.code;
      if (q.kind !== 'checkpoint' || code === 'taken_over') continue;
      // refused by seq: the plane holds another branch at that seq (an offline double claim), whole
      count(code === 'seq_conflict' ? diverged : incomplete, q.executionId);
    }
    after = page[page.length - 1].id;
  }
  // a run with any other refusal has a hole whatever else happened to it
  for (const id of incomplete.keys()) diverged.delete(id);
  return { incomplete, diverged };
}

/**
 * `waymark sync now`: always contacts the plane first (GET /v1/whoami) and says
 * what it found, then drains with progress, printing each retry with its reason.
 * True when nothing is left to send.
 */
export async function syncNow(
  store: Checkpointer,
  o: { url: string; apiKey: string; timeoutMs: number },
  out: Out,
  bar = progress('sync'),
): Promise<boolean> {
  const start = (await store.outboxStats()).pendingCount;
  // one drain, not a follower of the change feed: the command ends when the outbox is sent
  const replica = connectPlane(store, { url: o.url, apiKey: o.apiKey, pollMs: 0, followChanges: false });
  try {
    const ping = await replica.ping();
    if (ping.ok)
      out(
        `plane ${o.url}: reachable in ${ping.latencyMs} ms; project ${ping.project}; key ${ping.keyId} (${ping.scopes.join(',')})`,
      );
    else
      out(
        `plane ${o.url}: ${ping.status === 401 || ping.status === 403 ? 'refused the key' : 'not usable'}: ${ping.reason}`,
      );
    if (ping.ok && start > 0 && !ping.scopes.some((sc: string) => sc === 'ingest' || sc === 'admin')) {
      out(`this key lacks the 'ingest' scope: the ${start} waiting rows cannot be sent`);
      return false;
    }
    if (!ping.ok && (ping.status === 401 || ping.status === 403)) return false;
    if (start === 0) {
      out('synced 0 rows: the outbox is empty');
      return ping.ok;
    }
    let retries = 0;
    replica.on('ack', () => {
      void store.outboxStats().then((s) => bar.update(start - Math.min(start, s.pendingCount), start));
    });
    replica.on('state', (state: string) => {
      if (state !== 'backoff') return;
      retries++;
      void replica.status().then((s) => {
        const wait = s.nextAttemptAt
          ? `in ${Math.max(0, (Date.parse(s.nextAttemptAt) - Date.now()) / 1000).toFixed(1)} s`
          : 'soon';
        out(`retry ${retries} ${wait}: ${s.lastError ?? 'unknown error'}`);
      });
    });
    const s = await replica.flush({ timeoutMs: o.timeoutMs });
    bar.update(start - Math.min(start, s.pendingRows), start);
    bar.done();
    out(
      `synced ${s.sent} rows; ${s.pendingRows} waiting; ${s.quarantinedCount} quarantined; state ${s.state}${s.lastError ? `; last error: ${describeLastError({ ...s, at: '' })}` : ''}`,
    );
    return s.pendingRows === 0;
  } finally {
    await replica.stop();
  }
}

const DIVERGED_WHY: Record<DivergenceReason, string> = {
  seq_taken: 'a different row is stored here at that seq',
  predecessor_differs: 'the row before it here is not the one it follows',
  no_predecessor: 'the row it follows is missing',
  id_taken: 'its id is stored here at another place',
};

export async function restoreCommand(
  store: Checkpointer,
  executionId: string,
  o: { url: string; apiKey: string },
  out: Out,
  bar = progress('restore'),
): Promise<void> {
  const r = await restoreFromPlane(store, executionId, {
    url: o.url,
    apiKey: o.apiKey,
    onProgress: (p) => bar.update(p.rows, p.totalRows),
  });
  bar.done();
  out(
    `restored ${executionId}: ${r.inserted} rows written, ${r.skipped} already here; ` +
      `pause ${r.pendingImported ? 'restored' : 'none'}; ${r.idempotencyInserted} idempotency entries`,
  );
  for (const d of r.diverged) {
    out(
      `DIVERGED ${d.executionId} at seq ${d.seq} (${DIVERGED_WHY[d.reason]}): this store kept its own rows; ` +
        `${r.withheld} rows from the plane were not written. Fork the run to keep both branches, or delete it here and restore again to take the plane's.`,
    );
  }
  for (const p of r.stalePendingRemoved) {
    out(
      `STALE PAUSE removed: ${p.executionId} paused at checkpoint ${p.checkpointId}, which is no longer its newest row`,
    );
  }
}

export async function quarantineList(store: Checkpointer, out: Out, o: { json?: boolean } = {}): Promise<number> {
  const rows: string[][] = [['ID', 'KIND', 'EXECUTION', 'WHEN', 'REASON']];
  const all: QuarantinedEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.listQuarantined({ afterId: after, limit: 500 });
    if (!page.length) break;
    for (const q of page) rows.push([q.id, q.kind, q.executionId, localTime(q.createdAt), q.reason]);
    if (o.json) all.push(...page);
    after = page[page.length - 1].id;
  }
  if (o.json) out(JSON.stringify(all, null, 2));
  else if (rows.length === 1) out('nothing quarantined');
  else table(rows, out);
  return rows.length - 1;
}
