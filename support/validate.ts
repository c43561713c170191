/**
 * The validation kit: every refusal of a caller's options (INVALID_OPTIONS)
 * is made here, and each kind of problem is worded here once, so a problem
 * reads the same from every entry point (`field: must be …  (got …)`).
 *
 * - `refuse(call, problems, outcome?)` throws INVALID_OPTIONS naming every
 *   problem (`details.problems`); `InvalidOptions` is the error, for a refusal
 *   that is one sentence of its own (a data dir this plane cannot use).
 * - Problem builders return a problem or null: integers (a range, a unit),
 *   durations (ms), booleans, strings, functions, enumerations, URLs, API
 *   keys, readable names (shared/text.ts), and unknown option names.
 *
 * Unknown option names are refused: an options object is a plain object a
 * TypeScript caller types and a JavaScript caller does not, so a misspelled
 * name (`executionID`) would be dropped and the call would do the default
 * thing instead (a fresh run id where the caller meant its own). The closest
 * known name is suggested, as the CLI does for flags. An option's value is
 * checked for its type as well (`withoutPlane: 'yes'` is not true).
 *
 * Hand-written: the names are few and short; a fuzzy-match package would be a
 * dependency for ten lines.
 */
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import { CONTROL_CHARACTER, readableNameProblems, textLength, withinLength } from '../shared/text.js';
import { printable } from './terminal.js';

/** INVALID_OPTIONS: what a caller gave cannot be used; nothing was done. */
export class InvalidOptions extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(ErrorCode.INVALID_OPTIONS, message, options);
  }
}

/**
 * Throw INVALID_OPTIONS naming every problem (`details.problems`) when there
 * is any: `call` names what was refused, `outcome` (when given) what was left
 * as it was (`nothing was written`). Given a problem written out, it always
 * throws (typed `never`).
 */
export function refuse(call: string, problems: readonly [string, ...string[]], outcome?: string): never;
export function refuse(call: string, problems: readonly string[], outcome?: string): void;
export function refuse(call: string, problems: readonly string[], outcome?: string): void {
  if (problems.length) throw refusal(call, problems, outcome);
}

/** The error `refuse` throws, for a caller that throws it itself (`throw refusal(…)` narrows types; `refuse` may not). */
export function refusal(call: string, problems: readonly string[], outcome?: string): InvalidOptions {
  const message = `${call}: ${problems.join('; ')}${outcome ? `; ${outcome}` : ''}`;
  return new InvalidOptions(message, { details: { problems: [...problems] } });
}

/** What is wrong with one option's value, said for `field`, or null. Undefined is always fine: the option is not given. */
export type Check = (field: string, v: unknown) => string | null;

/** An options type's names, each with the check of its value (`true`: any value, or checked by the call itself). */
export type OptionNames = readonly string[] & { readonly checks: Readonly<Record<string, Check>> };

/**
 * The names of an options type, checked by the compiler: a name missing from
 * `names`, or one the type lacks, does not build. A name given a Check has
 * its value checked by `optionsProblems` too.
 */
export function optionNames<T>(names: Record<keyof T, true | Check>): OptionNames {
  const checks: Record<string, Check> = {};
  for (const [name, c] of Object.entries<true | Check>(names)) if (c !== true) checks[name] = c;
  return Object.assign(Object.keys(names), { checks });
}

/**
 * Each own name of `value` that is not in `known`, as a problem
 * (`unknown option 'maxTurn' (did you mean 'maxTurns'?)`). A name whose value
 * is `undefined` is passed over: it asks for nothing. `prefix` places the
 * object (`options.`), for a call with several.
 */
export function unknownOptions(value: unknown, known: readonly string[], prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const problems: string[] = [];
  for (const [name, v] of Object.entries(value)) {
    if (v === undefined || known.includes(name)) continue;
    const near = suggest(name, known);
    problems.push(`unknown option '${prefix}${name}'${near ? ` (did you mean '${prefix}${near}'?)` : ''}`);
  }
  return problems;
}

/**
 * What is wrong with an options argument: not an object (a string where the
 * options go: `run(input, 'order-42')`), names it does not know, or a value
 * its name's check refuses. Absent (`undefined`) is no problem: every option
 * has its default.
 */
export function optionsProblems(value: unknown, known: readonly string[] | OptionNames): string[] {
  if (value === undefined) return [];
  const problem = objectProblem('options', value);
  if (problem) return [problem];
  const problems = unknownOptions(value, known);
  if ('checks' in known)
    for (const [name, check] of Object.entries(known.checks)) {
      const v = (value as Record<string, unknown>)[name];
      const p = v === undefined ? null : check(name, v);
      if (p) problems.push(p);
    }
  return problems;
}

/** A value as a problem names it: numbers, booleans and short strings as they are, anything else by its type. */
export function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean') return String(v);
  return Array.isArray(v) ? 'an array' : typeof v;
}

/** Edit distance with transpositions, for "did you mean": small inputs only (command and option names). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      // a swap of two neighbours ("nwo" for "now") is one typo
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}

/** The closest of `known` to `word`, when it is close enough to be a typo; a difference of case alone always is. */
export function suggest(word: string, known: readonly string[]): string | null {
  const folded = known.find((k) => k.toLowerCase() === word.toLowerCase());
  if (folded) return folded;
  let best: string | null = null;
  let bestD = Infinity;
  for (const k of known) {
    const dist = k.startsWith(word) || word.startsWith(k) ? 1 : distance(word, k);
    if (dist < bestD) [best, bestD] = [k, dist];
  }
  return best !== null && bestD <= Math.max(1, Math.floor(best.length / 3)) ? best : null;
}

/** What is wrong with an API key, or null. The plane reads one token after `Bearer`: a key with whitespace in it is never one it issued. */
export function apiKeyProblem(apiKey: unknown): string | null {
  if (typeof apiKey !== 'string') return `apiKey: must be the plane's API key, a string (got ${shown(apiKey)})`;
  if (apiKey.trim() === '') return `apiKey: must not be empty or only whitespace`;
  if (/\s/.test(apiKey) || CONTROL_CHARACTER.test(apiKey))
    return 'apiKey: must not contain whitespace or control characters';
  return null;
}

/** What is wrong with a plane URL, or null (see ReplicaOptions.url). Its text is not quoted: it may hold a password or a token. */
export function urlProblem(url: unknown): string | null {
  const want = "must be the plane's http or https URL";
  if (typeof url !== 'string') return `url: ${want} (got ${shown(url)})`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `url: ${want} (got a string that is not a URL)`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `url: ${want} (got a '${u.protocol}' URL)`;
  if (u.username || u.password) return 'url: must not carry credentials (user:password@), the key goes in apiKey';
  if (u.search || u.hash) return 'url: must not carry a query or a fragment (no request would send it)';
  return null;
}

/**
 * What is wrong with a plane URL given on a command line (`--plane`, or the
 * variable `from` names), said for that option; null when it is a plane URL.
 * A host and port without a scheme (`127.0.0.1:4600`) gets the URL it meant.
 */
export function planeOptionProblem(url: string, from: string): string | null {
  const problem = urlProblem(url);
  if (!problem) return null;
  const meant =
    /^[\w.-]+:\d+(\/.*)?$/.test(url) || /^\[[\da-f:]+\]:\d+$/i.test(url) ? ` (did you mean 'http://${url}'?)` : '';
  return `${from}: ${problem.replace(/^url: /, '')}${meant}`;
}

/** What an integer from `least` to `most` is called: `must be an integer[ number of unit][, range]`. */
function integerWanted(least: number, most: number, unit?: string): string {
  const above = most < Number.MAX_SAFE_INTEGER;
  const range =
    least > Number.MIN_SAFE_INTEGER
      ? `, ${above ? `from ${least} to ${most}` : `at least ${least}`}`
      : above
        ? `, at most ${most}`
        : '';
  return `must be an integer${unit ? ` number of ${unit}` : ''}${range}`;
}

/**
 * `field: must be an integer …` when `v` is given and is not an integer from
 * `least` to `most` (Number.MIN_SAFE_INTEGER or no `most`: no bound on that
 * side); `unit` names what it counts (`ms`, `bytes`).
 */
export function integerProblem(
  field: string,
  v: unknown,
  least: number,
  most = Number.MAX_SAFE_INTEGER,
  unit?: string,
): string | null {
  if (v === undefined || (Number.isSafeInteger(v) && (v as number) >= least && (v as number) <= most)) return null;
  return `${field}: ${integerWanted(least, most, unit)} (got ${shown(v)})`;
}

/**
 * What is wrong with an integer given as text (a command-line flag, an
 * environment variable), without the field's name, or null: decimal digits
 * only (`1e3`, ` 16` or `-1` is a typo, not a number), from `least` to `most`.
 */
export function integerTextWanted(text: string, least: number, most = Number.MAX_SAFE_INTEGER, unit?: string) {
  const fits = /^\d+$/.test(text) && Number(text) >= least && Number(text) <= most;
  return fits ? null : `${integerWanted(least, most, unit)} (got ${shown(text)})`;
}

/** `field: must be an integer …` when `text` is given and is not the decimal digits of one from `least` to `most`. */
export function integerTextProblem(
  field: string,
  text: string | undefined,
  least: number,
  most?: number,
  unit?: string,
): string | null {
  const wanted = text === undefined ? null : integerTextWanted(text, least, most, unit);
  return wanted && `${field}: ${wanted}`;
}

/** A port given as text: an integer from 0 to 65535. */
export function portTextProblem(field: string, text: string | undefined): string | null {
  return integerTextProblem(field, text, 0, 65535);
}

/** `field: must be a number of at least `least`` when `v` is given and is not a finite number that large (a price, a rate). */
export function numberProblem(field: string, v: unknown, least: number): string | null {
  if (v === undefined || (typeof v === 'number' && Number.isFinite(v) && v >= least)) return null;
  return `${field}: must be a number, at least ${least} (got ${shown(v)})`;
}

/** A duration in milliseconds: an integer number of ms from `least` to `most`. */
export function durationProblem(field: string, v: unknown, least: number, most?: number): string | null {
  return integerProblem(field, v, least, most, 'ms');
}

/** What is wrong with `v` that is not one of `allowed`, without the field's name, or null: `must be 'a', 'b' or 'c' (got …)`. */
export function oneOfWanted(v: unknown, allowed: readonly unknown[]): string | null {
  if (allowed.includes(v)) return null;
  const names = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : String(a)));
  const choice = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names.join('');
  return `must be ${choice} (got ${shown(v)})`;
}

/** `field: must be one of …` when `v` is given and is not one of `allowed`; else null. */
export function oneOfProblem(field: string, v: unknown, allowed: readonly unknown[]): string | null {
  const wanted = v === undefined ? null : oneOfWanted(v, allowed);
  return wanted && `${field}: ${wanted}`;
}

/** `field: must be true or false` when `v` is given and is not a boolean (`'yes'` is not true). */
export const booleanProblem: Check = (field, v) =>
  v === undefined || typeof v === 'boolean' ? null : `${field}: must be true or false (got ${shown(v)})`;

/** `field: must be a string` when `v` is given and is not one. */
export const stringProblem: Check = (field, v) =>
  v === undefined || typeof v === 'string' ? null : `${field}: must be a string (got ${shown(v)})`;

/** `field: must be a function` when `v` is given and is not one. */
export const functionProblem: Check = (field, v) =>
  v === undefined || typeof v === 'function' ? null : `${field}: must be a function (got ${shown(v)})`;

/** `field: must be an object` when `v` is given and is not a plain object (an array, null, a string). */
export const objectProblem: Check = (field, v) =>
  v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v))
    ? null
    : `${field}: must be an object (got ${shown(v)})`;

/**
 * `field: …` when `v` is not a string of `least` to `most` characters
 * (code points, shared/text.ts); else null. Undefined is no string: a field
 * this checks is required.
 */
export function lengthProblem(field: string, v: unknown, least: number, most = Infinity): string | null {
  if (typeof v !== 'string') return `${field}: must be a string (got ${shown(v)})`;
  if (withinLength(v, least - 1))
    return least === 1 ? `${field}: must not be empty` : `${field}: must be at least ${least} characters`;
  return withinLength(v, most) ? null : `${field}: is ${textLength(v)} characters long, more than ${most}`;
}

/**
 * `field: NAME is …` when `v` is not a readable name of at most `max`
 * characters (the readable-name rule of shared/text.ts), each problem said;
 * the name is shown escaped and cut at 80 characters.
 */
export function readableNameProblem(field: string, v: unknown, max: number): string | null {
  if (typeof v !== 'string') return `${field}: must be a string (got ${shown(v)})`;
  const problems = readableNameProblems(v, max);
  return problems.length ? `${field}: ${shownName(v)} ${problems.join(' and ')}` : null;
}

/** A name as a problem quotes it: in JSON quotes, cut at 80 characters, every character a terminal acts on escaped. */
export function shownName(name: string): string {
  const chars = [...name];
  return printable(JSON.stringify(chars.length > 80 ? `${chars.slice(0, 80).join('')}…` : name));
}
