export { connectPlane, type ConnectOptions } from './connect.js';
export {
  Replica,
  type ReplicaOptions,
  type ReplicaStatus,
  type DrainState,
  type FlushOptions,
  type FlushResult,
  type PlaneClaim,
  type ReplicaEvents,
  type RoundOutcome,
  type RunUpdate,
  type ChangePull,
} from './replica.js';
export { restoreFromPlane, type RestoreOptions } from './restore.js';
export {
  cancelThroughPlane,
  type CancelThroughPlaneOptions,
  type PlaneCancelOptions,
  type PlaneCancelResult,
} from './cancel.js';
export {
  DECISIONS_CURSOR_META,
  decisionsCursorMeta,
  type DecisionRuns,
  type PullResult,
  type SkippedDecision,
  WRITER_DECISIONS_CURSOR_META,
} from './decision-feed.js';
