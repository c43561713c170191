/**
 * What the inspector's pages read, as one interface: `InspectorSource`. The
 * pages (pages.tsx) render whatever source they are given; two implement it:
 *
 * - the plane's (plane/ui/plane-source.ts), a thin layer over plane/reads/ for one
 *   project, with every plane-only part (holes, claim conflicts, takeovers);
 * - a local store's (client/ui/local-source.ts, `waymark ui`), over the
 *   Checkpointer contract, with the outbox's sync status.
 *
 * A part a source does not have is an optional member it leaves out, and the
 * pages hide that part: a local store has no claim conflicts to list, which is
 * not the same as a plane that found none. Nothing here imports a database.
 */
import type { Json } from '../shared/json.js';
import type { DecisionRequest, DecisionState } from '../shared/protocol.js';
import type { Checkpoint, Decision, IdempotencyEntry, PendingInterrupt, Step } from '../shared/rows.js';
import type { UsageTotal } from '../shared/usage.js';
import type { Counted } from '../support/count.js';
import type { RunPageProps, RunPageRest } from './run-page.js';
import type { RunItem } from './runs-page.js';
import type { SyncStatus } from './sync-page.js';
import type { QuarantineItem } from './quarantine-page.js';

/** A page of items and the cursor of the next one (null: the last page). */
export interface Paged<T> {
  items: T[];
  nextCursor: string | null;
}

export interface RunsQuery {
  status?: string;
  writer?: string;
  /** execution ids starting with this */
  q?: string;
  /** runs whose agent path (the Agent column) contains this, in any case */
  agent?: string;
  /** failed runs whose error has this code (the code the Status column shows) */
  errorCode?: string;
  /** only runs updated at or after this time (ISO 8601) */
  updatedSince?: string;
  /**
   * Only the runs that need a person ("Needs attention"): failed; stale (running, but its runner's lease or hold
   * expired without an end: it crashed or stalled; a LangGraph thread holds none and is never stale); paused
   * with no row since before `pausedBefore` (an answer is overdue); and, where the source has them, a claim
   * conflict or a copy with holes (the plane's).
   */
  attention?: { pausedBefore: string };
  cursor?: string;
  limit: number;
}

/**
 * What the timeline shows of a row: everything but its payloads (state, input, a pause's context), and a run-end
 * marker's output (its error: what the row before it is said to have ended with); a source may leave out other rows'.
 */
export type RowHead = Pick<
  Checkpoint,
  'id' | 'seq' | 'nodeId' | 'turn' | 'step' | 'status' | 'agentPath' | 'interruptReason' | 'createdAt' | 'writerId'
> & { nodeOutput?: Checkpoint['nodeOutput'] };

/**
 * Which of a run's rows a timeline page shows: the first `limit` matching rows with seq above `after`, or (no
 * `after`) the last `limit` matching rows with seq below `before` (neither: the run's newest rows). A seq is the
 * rows' cursor in every source, so a page is named by one and a link to a row (`?seq=N#seq-N`) needs no source.
 */
export interface RowsQuery {
  after?: number;
  before?: number;
  limit: number;
  /** only rows of this step */
  step?: Step;
  /** only rows of this agent path and the agents and tools under it (`a` matches `a` and `a/…`, not `ab`) */
  agentPath?: string;
}

/** A page of rows in seq order, and whether more matching rows lie beyond it in the direction it was read. */
export interface RowsPage {
  items: RowHead[];
  more: boolean;
}

/** Whether `agentPath` is `under` or a path beneath it (the rule of `RowsQuery.agentPath`, for sources that filter here). */
export const isUnder = (agentPath: string, under: string) => agentPath === under || agentPath.startsWith(`${under}/`);

export type RunSummary = RunPageProps['execution'];
export type Hole = RunPageRest['holes'][number];
export type PauseView = NonNullable<RunPageRest['pause']>;
export type ClaimConflict = NonNullable<RunPageRest['conflicts']>[number];
export type Takeover = NonNullable<RunPageRest['takeovers']>[number];

/** A decision and where it stands (the plane's DecisionView and a store's StoredDecision both are one). */
export type DecisionShown = Decision & { state: DecisionState; appliedBy: string | null; appliedAt: string | null };

/** One unanswered pause of the approvals inbox, with its decision if one was recorded. */
export type InboxItem = PendingInterrupt & { ageMs: number; state: 'open' | 'claimed'; decision: DecisionShown | null };

/**
 * The reads of the inspector. Cursors are the source's own: a cursor it did not
 * issue throws an error with code BAD_CURSOR (the pages answer 400).
 */
export interface InspectorSource {
  /**
   * Runs matching the query, one page (usage included), and how many match in all. Every filter is applied as
   * the source reads (the pages stay full and the cursor exact), never to a page after it was read. One exception,
   * the plane's: with status `running` or `paused`, a LangGraph thread waiting at an interrupt (its summary says
   * running) is sorted into `paused` after the page is read, so such a page may come up short before its Next link.
   */
  listRuns(q: RunsQuery): Promise<Paged<RunItem> & { count: Counted }>;
  /** One run, or null when this source has no run by that id. */
  getRun(executionId: string): Promise<RunSummary | null>;
  /** A page of the run's rows matching the query, in seq order (read on until the page is full or the run ends). */
  listRows(executionId: string, q: RowsQuery): Promise<RowsPage>;
  /** Row `seq` of the run with its payloads (its state as stored, encoded), or null when the run has no such row. */
  getRow(executionId: string, seq: number): Promise<Checkpoint | null>;
  /**
   * The decoded state of row `seq`, or null when the run has no such row; a
   * row whose chain does not decode throws (code CORRUPT_ROW).
   */
  stateAt(executionId: string, seq: number): Promise<Record<string, Json> | null>;
  /** The run's pause (open, or claimed where the source keeps claimed ones), or null. */
  pauseState(executionId: string): Promise<PauseView | null>;
  /** A page of the run's idempotency entries by key (a run may record many large effect results). */
  listIdempotency(executionId: string, o: { cursor?: string; limit: number }): Promise<Paged<IdempotencyEntry>>;
  /** Model usage summed over all rows of the run. */
  runUsage(executionId: string): Promise<UsageTotal>;
  /** Quarantined entries, oldest first; of one run when `executionId` is given. */
  listQuarantine(o: { cursor?: string; limit: number; executionId?: string }): Promise<Paged<QuarantineItem>>;
  /** The run it was forked from and, where the source can list them, the runs forked from it. */
  forkLinks(executionId: string): Promise<Pick<RunPageRest, 'forkOf' | 'forks'>>;
  /** Rows of the run this source refused (the plane's holes). Absent: this source cannot have holes. */
  listHoles?(executionId: string): Promise<Hole[]>;
  /** Pauses of the run two writers claimed (the plane arbitrates claims). */
  listClaimConflicts?(executionId: string): Promise<ClaimConflict[]>;
  /** Takeovers of the run by another machine (the plane arbitrates takeovers). */
  listTakeovers?(executionId: string): Promise<Takeover[]>;
  /** The outbox's sync status (a local store's; the plane is the other end). */
  syncStatus?(): Promise<SyncStatus>;

  // Approvals. A source without them has no approvals page and no form.
  /** The unanswered pauses, oldest first, paged (the approvals inbox). */
  listPauses?(o: { cursor?: string; limit: number }): Promise<Paged<InboxItem>>;
  /** Every decision, in recording order, paged. */
  listDecisions?(o: { cursor?: string; limit: number }): Promise<Paged<DecisionShown>>;
  /** The decisions recorded for the run's pauses, in recording order. */
  runDecisions?(executionId: string): Promise<DecisionShown[]>;
  /**
   * Record a decision for the run's open pause (never resumes the run: the
   * application's worker applies it). Refusals throw with a stable code:
   * INVALID_REQUEST, PAUSE_NOT_FOUND, PAUSE_CLOSED, ALREADY_DECIDED
   * (details.decision: the first).
   */
  recordDecision?(executionId: string, req: DecisionRequest, decidedBy: string): Promise<DecisionShown>;
}
