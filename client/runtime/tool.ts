import { z } from 'zod';
import { deepFreeze, type Json } from '../../shared/json.js';
import type { ToolSpec } from '../models/model.js';

/** A tool the model may call; its arguments are validated with `parameters` before it runs. */
export interface Tool<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: P;
  readonly execute: (args: z.infer<P>) => unknown;
  /** Set for a tool that delegates to a worker agent (see Agent.asTool). */
  readonly delegate?: DelegateTarget;
}

/** What a delegating tool needs from the worker agent (kept abstract to avoid an import cycle). */
export interface DelegateTarget {
  readonly name: string;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Define a tool. Names are 1–64 of `A-Za-z0-9_-` (they appear in node ids and paths). */
export function tool<P extends z.ZodType>(def: { name: string; description: string; parameters: P; execute: (args: z.infer<P>) => unknown }): Tool<P> {
  if (!TOOL_NAME.test(def.name)) throw new Error(`invalid tool name '${def.name}': use 1-64 of A-Za-z0-9_-`);
  return Object.freeze({ ...def });
}

/** The definition a model sees (the agent builds it once, on the model's first read). */
export function toolSpec(t: Tool): ToolSpec {
  return deepFreeze({
    name: t.name,
    description: t.description,
    parameters: z.toJSONSchema(t.parameters, { unrepresentable: 'any' }) as Json,
  });
}
