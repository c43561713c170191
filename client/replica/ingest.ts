/**
 * One batch of the outbox to the plane (POST /v1/ingest) and its answer
 * applied: rows the plane accepted (or already held) are synced, rows it
 * refused are quarantined with its reason, in one local transaction. The
 * drain (drain.ts) decides what a failure means; this sends and applies.
 *
 * It also keeps the store's note of the runs in flight (`noteSending`): from
 * the moment a batch may reach the plane its runs count as held there, and
 * the note is cleared only when the plane surely holds none of it (the
 * request was refused, or never reached any server and no earlier one went
 * unanswered).
 *
 * Fault points: 'drain.afterResponse' (the plane answered, nothing applied),
 * 'drain.afterApply' (the answer applied here).
 */
import { IngestResponse, PROTOCOL_VERSION } from '../../shared/protocol.js';
import type { Checkpointer, OutboxEntry } from '../checkpointer.js';
import type { FaultHook } from '../faults.js';
import { retryAfter } from '../retry.js';
import { sendingNote } from '../store/outbox.js';
import { BacklogCount } from './backlog-count.js';
import type { PlaneHttp } from './http.js';
import { foreignBody } from './plane-calls.js';
import { planeReason } from './refusal.js';

/** What the plane said of one batch, applied. */
export interface IngestAnswer {
  /** Rows synced (accepted, or already held there). */
  synced: number;
  /** Rows quarantined, by outbox id, each with the plane's reason. */
  quarantined: Record<string, string>;
  /** Runs the plane refused as taken over by another machine, with its reason and whether it was cancelled there. */
  lost: Map<string, { reason: string; cancelled: boolean }>;
}

/** Who sends, over which connection, within what time. */
export interface IngestOptions {
  writerId: string;
  http: PlaneHttp;
  /** The key as it is now. */
  apiKey: () => string;
  timeoutMs: number;
  faults: FaultHook;
}

/** The plane answered a batch with anything but a well-formed 200. */
export class HttpFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

export class Ingest {
  /** An ingest was sent and no answer came (a timeout, a reset): a plane may hold what it carried. */
  private unanswered = false;
  /** The note of the batch in flight as last written to the store (`sendingNote` text); null: not written by this drain yet. */
  private inFlight: string | null = null;
  private readonly backlogCount: BacklogCount;

  constructor(
    private readonly store: Checkpointer,
    private readonly o: IngestOptions,
  ) {
    this.backlogCount = new BacklogCount(store);
  }

  /** The store's note of the runs in flight (`noteSending`), written only when it changes. */
  private async noteInFlight(runs: string[]): Promise<void> {
    const text = sendingNote(runs);
    if (text === this.inFlight) return;
    await this.store.noteSending(runs);
    this.inFlight = text;
  }

  /**
   * Send one batch and apply the plane's per-row answers in one local
   * transaction. Throws HttpFailure for any answer but a well-formed 200
   * (nothing applied), or the request's own error when no answer came.
   */
  async send(entries: OutboxEntry[]): Promise<IngestAnswer> {
    const bytes = entries.reduce((n, e) => n + e.bytes, 0);
    const body = {
      protocol: PROTOCOL_VERSION,
      writerId: this.o.writerId,
      backlog: await this.backlogCount.take(entries.length, bytes),
      rows: entries.map((e) => e.event),
    };
    const runs = [...new Set(entries.map((e) => e.executionId))];
    // from here the plane may commit the batch though its answer never arrives: its runs count as held by the plane
    await this.noteInFlight(runs);
    const res = await this.o.http
      .request('POST', '/v1/ingest', { apiKey: this.o.apiKey(), json: body, timeoutMs: this.o.timeoutMs })
      .catch(async (e: unknown) => {
        // no connection was ever made (refused, no such host), and no earlier attempt went unanswered (a plane may
        // have committed that one and died since): no plane holds anything of these runs for this drain
        if (neverConnected(e) && !this.unanswered) await this.noteInFlight([]);
        else this.unanswered = true;
        throw e;
      });
    this.unanswered = false;
    this.o.faults('drain.afterResponse');
    if (res.status !== 200) {
      // a refusal of the request (not a timeout): the plane committed none of it, so none of its runs is held there for it
      if (res.status >= 400 && res.status < 500 && res.status !== 408) await this.noteInFlight([]);
      const msg =
        (res.body as { error?: { message?: string } } | null)?.error?.message ?? foreignBody(res.status, res.body);
      throw new HttpFailure(res.status, msg, retryAfter(res.headers['retry-after']));
    }
    const parsed = IngestResponse.safeParse(res.body);
    if (!parsed.success || parsed.data.results.length !== entries.length) {
      throw new HttpFailure(502, 'the plane answered 200 with a malformed body');
    }
    const synced: string[] = [];
    const quarantined: Record<string, string> = {};
    const acked = new Set<string>();
    parsed.data.results.forEach((r, i) => {
      if (r.status === 'rejected') quarantined[entries[i].id] = planeReason(r.code, r.reason);
      else {
        synced.push(entries[i].id);
        acked.add(entries[i].executionId);
      }
    });
    await this.store.applyResults({ synced, quarantined });
    // a run whose every row of the batch the plane refused is not held there for this batch
    if (acked.size < runs.length) await this.noteInFlight(runs.filter((r) => acked.has(r)));
    this.backlogCount.answered(entries.length, bytes);
    this.o.faults('drain.afterApply');
    // another machine took a run of this writer over while it was away: said once per run
    const lost = new Map<string, { reason: string; cancelled: boolean }>();
    parsed.data.results.forEach((r, i) => {
      if (r.status === 'rejected' && r.code === 'taken_over')
        lost.set(entries[i].executionId, { reason: r.reason, cancelled: r.cancelled === true });
    });
    return { synced: synced.length, quarantined, lost };
  }
}

/** Errors that say the request never reached any server: its batch is held by no plane. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function neverConnected(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    if (NOT_CONNECTED.has((c as { code?: string }).code ?? '')) return true;
  }
  return false;
}
