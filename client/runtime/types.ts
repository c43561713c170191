/**
 * The runtime's shared types, in one file that imports no other runtime file
 * but the lease's type, so the files that use them never import each other in
 * a circle: what a run returns (RunResult) and tells while it goes (RunEvent),
 * the options of `run` and `resume`, and what the agent loop passes around (a
 * run's state, a level, the entry the loop starts at).
 */
import type { Json } from '../../shared/json.js';
import type { Checkpoint, PendingInterrupt } from '../../shared/rows.js';
import type { State } from '../../shared/codec.js';
import type { UsageRecord } from '../../shared/usage.js';
import type { Checkpointer } from '../checkpointer.js';
import type { Message, ToolCall } from '../models/model.js';
import type { RunLease } from './lease.js';

/** How a run (or resume) ended: completed with its output, paused with its open pause, or failed with an error. */
export interface RunResult {
  status: 'completed' | 'paused' | 'failed';
  executionId: string;
  output?: string;
  pendingInterrupt?: PendingInterrupt;
  error?: { code: string; message: string };
}

/**
 * What `onEvent` sees while a run goes. `committed` says whether the event's
 * content is already in a row: a `text-delta` never is (the reply is written
 * with the step's next row), a `tool-result` is written with the next row the
 * run writes. A crash loses what was not committed; on resume the model call is
 * re-issued and a `step-start` with the same `checkpointId` (and
 * `reentered: true`) comes again: an app drops the text it showed for that
 * checkpoint and shows the new one.
 */
export type RunEvent =
  | {
      type: 'step-start';
      committed: true;
      executionId: string;
      agentPath: string;
      turn: number;
      checkpointId: string;
      reentered: boolean;
    }
  | { type: 'text-delta'; committed: false; executionId: string; agentPath: string; turn: number; delta: string }
  | {
      type: 'tool-call';
      committed: true;
      executionId: string;
      agentPath: string;
      turn: number;
      call: ToolCall;
      checkpointId: string;
    }
  | {
      type: 'tool-result';
      committed: false;
      executionId: string;
      agentPath: string;
      turn: number;
      toolCallId: string;
      name: string;
      content: string;
    }
  | { type: 'pause'; committed: true; executionId: string; pendingInterrupt: PendingInterrupt }
  | { type: 'end'; committed: true; executionId: string; result: RunResult };

/** Options of `run`, `resume` and `fork`. */
export interface RunOptions {
  /**
   * Called synchronously with each event, in order. Its errors are caught and
   * dropped: a listener cannot change what the run writes. With a listener
   * the agent uses the model's `stream` method when it has one.
   */
  onEvent?: (event: RunEvent) => void;
}

/** Options of `run`: the run's id, and the event listener. */
export interface StartOptions extends RunOptions {
  /**
   * The run's id (1–200 characters of printable text; default: a new UUIDv7). An id that already has rows is
   * refused (EXECUTION_EXISTS): a retry of the same call does not run again.
   */
  executionId?: string;
}

/** Options of `fork`: where the branch starts, what it is told, and its id. */
export interface ForkOptions extends RunOptions {
  /** The row to branch from (a checkpoint id of the run; default: its newest step). */
  checkpointId?: string;
  /** A user message the branch starts with, at a turn boundary. */
  input?: string;
  /** The branch's id (default: a new UUIDv7); one that already has rows is refused (EXECUTION_EXISTS). */
  executionId?: string;
}

/** Options of `asTool`: how the supervisor's model sees this agent. */
export interface AsToolOptions {
  /** The tool's name (default: the agent's name); a path segment, as tool names are. */
  name?: string;
  /** What the model is told the tool does (default: "Delegate a task to the NAME agent."). */
  description?: string;
}

/** Options of `resume`: which pause the answer is for, and the decision it applies. */
export interface ResumeOptions extends RunOptions {
  /** Answer only this pause (its `interrupted` checkpoint id): another open pause of the run is AlreadyResumed naming both; nothing is claimed. */
  checkpointId?: string;
  /** The decision this resume applies (a decision worker): recorded on the claim, locally and at the plane. Needs `checkpointId`; the store refuses (INVALID_DECISION) a decision it holds for another pause. */
  decisionId?: string;
  /**
   * Resume a run a plane holds from a store with no plane connected, giving
   * up the fleet-wide claim (another machine may resume the same pause
   * through the plane). Without it such a resume is refused with
   * NotConnected (PLANE_NOT_CONNECTED) and nothing is claimed.
   */
  withoutPlane?: boolean;
  /**
   * Take the run up only while its newest row is this one (a checkpoint id):
   * checked before anything is claimed, again once the lease is taken, and
   * again after a connected plane's takeover brought what it holds. A run that
   * moved on since (retried, recovered, resumed from code, taken up by
   * another machine) is refused with MovedOn (MOVED_ON) and nothing is
   * written. The run-request worker applies retry and recover with it, so a
   * request two workers see moves the run once.
   */
  expectNewestId?: string;
}

/** A run's state as its rows hold it: the conversation so far and the turn it is at. */
export interface RunState extends State {
  messages: Message[] & Json[];
  turn: number;
}

/** One agent's place in an execution while it runs: where its rows go, its lease, its pending usage. */
export interface Level {
  executionId: string;
  store: Checkpointer;
  path: string;
  /** Rows of this level come after this seq (its parent's tool row), -1 at the top. */
  afterSeq: number;
  /**
   * The newest row of the execution this level knows of (null before a fresh
   * run's first row): each write names it, so a write into an execution
   * deleted or pruned meanwhile is refused (EXECUTION_GONE) instead of
   * starting it again at seq 0.
   */
  prevId: string | null;
  /** The runner's lease on the execution (shared by nested workers). */
  lease: RunLease;
  /** Usage of model calls not yet written: the next row written takes it (shared by nested workers). */
  usage: UsageRecord[];
  onEvent?: (event: RunEvent) => void;
}

/** Where a level's rows are: enough to read them, no lease needed. */
export type Place = Omit<Level, 'lease' | 'prevId' | 'usage' | 'onEvent'>;

/** Where the loop starts: at a model call (writing its row, or re-entering one), or at a call of the last reply's tools. */
export type Entry =
  | { kind: 'model'; write: boolean }
  | { kind: 'tool'; index: number; row: Checkpoint | null; resumes: Json[]; single: boolean };
