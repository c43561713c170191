import { z } from 'zod';
import { deepFreeze, type Json } from '../../shared/json.js';
import { printable } from '../../support/terminal.js';
import { nameLengthProblem } from '../../shared/text.js';
import { readableNameProblem, refuse, shownName, stringProblem } from '../../support/validate.js';
import type { ToolSpec } from '../models/model.js';

/** A tool the model may call; its arguments are validated with `parameters` before it runs. */
export interface Tool<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: P;
  /** Runs the call with its validated arguments; what it returns (or resolves) is the result the model sees. */
  readonly execute: (args: z.infer<P>) => unknown;
  /** Set for a tool that delegates to a worker agent (see Agent.asTool). */
  readonly delegate?: DelegateTarget;
}

/**
 * What a delegating tool needs from the worker agent (kept abstract to avoid an import cycle).
 *
 * @inline
 */
export interface DelegateTarget {
  readonly name: string;
}

/** A name `tool()` makes: what model APIs take as a function name. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const NAME_RULE = 'use 1-64 of A-Za-z0-9_- (what model APIs take as a function name)';

/** The longest agent or tool name a path holds: `turn:N/tool:NAME` within a node id, three levels within an agent path. */
const SEGMENT_MAX = 256;

/**
 * What keeps a name from being a segment of the paths rows are filed under
 * (`agent:NAME/tool:NAME`, split on '/'), as a problem (none: it can be one):
 * the readable-name rule (support/validate.ts: not blank, at most SEGMENT_MAX
 * characters, nothing a terminal acts on, no half a character), and no '/'.
 * A path could hold a blank name or a control character, but a name nobody
 * can read or type back is refused whenever an agent is made. Anything else
 * goes (`Refund Bot`, `billing.eu`): the rule refuses only what nobody can
 * read, so an agent keeps any other name its stored runs are filed under.
 */
export function segmentProblems(what: string, name: unknown): string[] {
  const problem = readableNameProblem(what, name, SEGMENT_MAX);
  if (typeof name !== 'string' || !name.includes('/')) return problem ? [problem] : [];
  const split = "holds '/', which splits a path";
  return [problem ? `${problem} and ${split}` : `${what}: ${shownName(name)} ${split}`];
}

/**
 * What is wrong with a name for `tool()`, each problem said (none: it is
 * valid): not text, empty, over 64 characters, or holding characters other
 * than `A-Za-z0-9_-` (each such character named once).
 */
export function nameProblems(what: string, name: unknown): string[] {
  if (typeof name !== 'string') return [`${stringProblem(what, name)}; ${NAME_RULE}`];
  if (NAME.test(name)) return [];
  const problems: string[] = [];
  const length = nameLengthProblem(name, 64);
  if (length) problems.push(length);
  const bad = [...new Set([...name].filter((c) => !/^[A-Za-z0-9_-]$/.test(c)))];
  if (bad.length) problems.push(`holds ${bad.map((c) => printable(JSON.stringify(c))).join(', ')}`);
  return [`${what}: ${shownName(name)} ${problems.join(' and ')}; ${NAME_RULE}`];
}

/** Define a tool. Names are 1–64 of `A-Za-z0-9_-`, what model APIs take as a function name; another is refused with INVALID_OPTIONS. */
export function tool<P extends z.ZodType>(def: {
  name: string;
  description: string;
  parameters: P;
  execute: (args: z.infer<P>) => unknown;
}): Tool<P> {
  refuse('tool', nameProblems('name', def.name));
  return Object.freeze({ ...def });
}

/**
 * A called tool's name as its row's node id and agent path hold it
 * (`turn:N/tool:NAME`). The loop uses it for a name the agent has no tool
 * of, which a model may make up as it likes: a valid name as it is, any
 * other percent-encoded (so a '/' cannot split the path nor a control
 * character fail the row's schema), at most 64 characters. The run's
 * history keeps the name as the model gave it.
 */
export function toolSegment(name: string): string {
  if (NAME.test(name)) return name;
  let out = '';
  for (const c of name.toWellFormed()) {
    const piece = /^[A-Za-z0-9_-]$/.test(c) ? c : encodeURIComponent(c);
    // a cut name ends in a lone '%': never a tool()'s name, nor a whole name encoded, whatever it was cut from
    if (out.length + piece.length > 63) return `${out}%`;
    out += piece;
  }
  return out;
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
