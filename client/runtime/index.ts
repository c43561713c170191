export { Agent, type AgentOptions } from './agent.js';
export type {
  AsToolOptions,
  ForkOptions,
  ResumeOptions,
  RunEvent,
  RunOptions,
  RunResult,
  StartOptions,
} from './types.js';
export { interrupt, Resume } from './interrupt.js';
export { currentEffect, idempotent, type EffectInfo, type IdempotentOptions } from './idempotent.js';
export { tool, type Tool } from './tool.js';
export { currentRun } from './context.js';
export {
  recoverRuns,
  type RecoverOptions,
  type RecoveryOutcome,
  type RecoveryReport,
  type SkippedRun,
} from './recover.js';
export {
  serveDecisions,
  type DecisionLogger,
  type DecisionOutcome,
  type ServeDecisionsOptions,
  type ServeSummary,
} from './decisions.js';
export type { RequestOutcome, RequestSummary } from './requests.js';
export type { RunRequestView } from '../../shared/protocol.js';
export { decide, type DecideInput } from './decide.js';
