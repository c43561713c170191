/**
 * `waymark`: agents and their durable runs, the store contract, the models, and the link to a plane.
 * The stores themselves are `waymark/sqlite` and `waymark/postgres` (`openStore` opens either by its spec).
 *
 * @module waymark
 */
export type * from './checkpointer.js';
export { PlaneGuardSlot } from './checkpointer.js';
export type { DivergedExecution, DivergenceReason } from './store/import.js';
export * from './errors.js';
export { noFaults, type FaultHook, type FaultPoint } from './faults.js';
export { ErrorCode, WaymarkError, hasCode } from '../shared/errors.js';
export { uuidv7 } from '../shared/ids.js';
export type { Json } from '../shared/json.js';
export type { State } from '../shared/codec.js';
export type {
  Checkpoint,
  PendingInterrupt,
  IdempotencyEntry,
  OutboxEvent,
  Decision,
  ResumeValue,
} from '../shared/rows.js';
export type { DecisionRequest, DecisionState, DecisionView, PauseView } from '../shared/protocol.js';
export * from './runtime/index.js';
export type {
  Model,
  ModelReply,
  ModelRequest,
  ModelStreamPart,
  ModelUsage,
  FinishReason,
  Message,
  ToolCall,
  ToolSpec,
} from './models/model.js';
export { usageOf, sumUsage, usageLine, type UsageRecord, type UsageTotal } from '../shared/usage.js';
export { ScriptedModel, type ScriptRule, type ScriptContext, type ScriptReply } from './models/scripted.js';
export { OpenAIChatModel, ModelError, parseReply, type OpenAIChatOptions } from './models/openai.js';
export * from './replica/index.js';
export { openStore, type OpenStoreOptions } from './open-store.js';
