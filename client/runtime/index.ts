export { Agent, type AgentOptions, type RunResult, type RunEvent, type RunOptions } from './agent.js';
export { interrupt, Resume } from './interrupt.js';
export { currentEffect, idempotent, type EffectInfo, type IdempotentOptions } from './idempotent.js';
export { tool, type Tool } from './tool.js';
export { currentRun } from './context.js';
export { recoverRuns, type RecoverOptions, type RecoveryOutcome, type RecoveryReport } from './recover.js';
export {
  serveDecisions,
  type DecisionLogger,
  type DecisionOutcome,
  type ServeDecisionsOptions,
  type ServeSummary,
} from './decisions.js';
export type { ResumeOptions } from './pause.js';
export { decide, type DecideInput } from './decide.js';
