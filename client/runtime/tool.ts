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

/**
 * The first parses of each schema's arguments in a process are interpreted:
 * zod compiles an object schema's fast path (`new Function`, cached on the
 * schema) on its first parse, which cost a fresh process 0.4–0.9 ms a schema
 * (measured), while an interpreted parse costs about 2.5 µs against 0.1
 * compiled. A resume in a fresh process calls its tool once or twice; a
 * server calls it thousands of times and compiles it after COLD_PARSES. Both
 * modes accept and reject the same arguments with the same issues. A
 * process-wide count, kept weakly by schema (what zod caches on).
 */
export const COLD_PARSES = 4;
const parses = new WeakMap<z.ZodType, number>();

/** Validate a tool call's arguments with the tool's schema. */
export function parseArguments<P extends z.ZodType>(t: Tool<P>, args: unknown): z.ZodSafeParseResult<z.output<P>> {
  const schema = t.parameters;
  const n = parses.get(schema) ?? 0;
  if (n >= COLD_PARSES) return schema.safeParse(args);
  parses.set(schema, n + 1);
  return schema.safeParse(args, { jitless: true });
}
