/**
 * Unknown option names, refused. An options object is a plain object a
 * TypeScript caller types and a JavaScript caller does not: a misspelled
 * name (`executionID`, `checkpointid`) was dropped, and the call did the
 * default thing instead — a fresh run id where the caller meant its own (a
 * retry then ran the run twice), whichever pause was open where the caller
 * named one. Each public call that takes options names such a name with the
 * rest of its problems (INVALID_OPTIONS), and the closest known name when one
 * is near, as the CLI does for flags.
 *
 * Hand-written: the names are few and short; a fuzzy-match package would be a
 * dependency for ten lines.
 */
import { ErrorCode, WaymarkError } from '../shared/errors.js';

/** The names of an options type, checked by the compiler: a name missing from `names`, or one the type lacks, does not build. */
export function optionNames<T>(names: Record<keyof T, true>): readonly string[] {
  return Object.keys(names);
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
 * options go: `run(input, 'order-42')`), or names it does not know. Absent
 * (`undefined`) is no problem: every option has its default.
 */
export function optionsProblems(value: unknown, known: readonly string[]): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [`options: must be an object (got ${shown(value)})`];
  return unknownOptions(value, known);
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
  if (/[\s\u0000-\u001f\u007f]/.test(apiKey)) return 'apiKey: must not contain whitespace or control characters';
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

/** `field: must be an integer …` when `v` is given and not an integer from `least` to `most`; else null. */
export function integerProblem(field: string, v: unknown, least: number, most: number, unit: string): string | null {
  if (v === undefined || (Number.isSafeInteger(v) && (v as number) >= least && (v as number) <= most)) return null;
  const range = most === Number.MAX_SAFE_INTEGER ? `at least ${least}` : `from ${least} to ${most}`;
  return `${field}: must be an integer number of ${unit}, ${range} (got ${shown(v)})`;
}

/** `field: must be one of …` when `v` is given and not one of `allowed`; else null. */
export function oneOfProblem(field: string, v: unknown, allowed: readonly string[]): string | null {
  if (v === undefined || allowed.includes(v as string)) return null;
  return `${field}: must be ${allowed.map((a) => `'${a}'`).join(' or ')} (got ${shown(v)})`;
}

/**
 * Throw INVALID_OPTIONS naming every problem (`details.problems`) when there
 * is any: `call` names the function refused, `outcome` what was left as it was.
 */
export function refuseOptions(call: string, problems: string[], outcome = 'nothing was started'): void {
  if (problems.length)
    throw new WaymarkError(ErrorCode.INVALID_OPTIONS, `${call}: ${problems.join('; ')}; ${outcome}`, {
      details: { problems },
    });
}
