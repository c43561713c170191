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
