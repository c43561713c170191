/**
 * What text may hold where people read it: the one definition of a control
 * character, the characters a terminal acts on, and the readable-name rule.
 *
 * Glossary:
 * - control character: a C0 control (U+0000–U+001F) or DEL. No id holds one
 *   (Postgres text cannot hold U+0000, and the rest move a terminal's cursor
 *   or colour).
 * - C1 control (U+0080–U+009F) and reordering mark (the line and paragraph
 *   separators, the bidi marks, embeddings, overrides and isolates): text an
 *   id may hold, but a terminal acts on each as on a control character
 *   (`evil\u202egnp.exe` reads as `evilexe.png`).
 * - length: in code points, what a person counts; never UTF-16 units.
 */

const CONTROL = '\\u0000-\\u001f\\u007f';
const C1_AND_REORDERING = '\\u0080-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';

/** A control character (see the glossary above). */
export const CONTROL_CHARACTER = new RegExp(`[${CONTROL}]`, 'u');

/** Every character a terminal acts on: a control character, a C1 control or a reordering mark (global: use with replace and match). */
export const TERMINAL_ACTIVE = new RegExp(`[${CONTROL}${C1_AND_REORDERING}]`, 'gu');

/** The length of `s` in code points, the one unit every length rule uses. */
export function textLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Strings in Unicode code point order, which is UTF-8 byte order and
 * Postgres's `COLLATE "C"`: the order SQLite compares text in, and the one
 * every statement that locks several executions takes them in.
 */
export const codePointOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Whether `s` is at most `max` code points long, counted only when its UTF-16 length could be over. */
export function withinLength(s: string, max: number): boolean {
  return s.length <= max || textLength(s) <= max;
}

/** Each character of `s` a terminal acts on, once, in order of appearance. */
export function terminalControls(s: string): string[] {
  return [...new Set(s.match(TERMINAL_ACTIVE) ?? [])];
}

/** A character as a JSON-style escape (`\u001b`). */
export function escapeCharacter(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** What is wrong with a name's length, as a phrase: `is empty`, or `is N characters long, more than max`; else null. */
export function nameLengthProblem(name: string, max: number): string | null {
  if (name === '') return 'is empty';
  return withinLength(name, max) ? null : `is ${textLength(name)} characters long, more than ${max}`;
}

/**
 * The readable-name rule: what keeps `name` from being one a person can read
 * and type back, each as a phrase (none: it is one). A name is not blank, at
 * most `max` code points, holds nothing a terminal acts on, and no half of a
 * character. Agent and tool names, key names, a decision's `decidedBy` and a
 * fresh run's id are held to it.
 */
export function readableNameProblems(name: string, max: number): string[] {
  const problems: string[] = [];
  const length = nameLengthProblem(name, max);
  if (length) problems.push(length);
  if (name !== '' && !name.trim()) problems.push('is blank');
  const controls = terminalControls(name);
  if (controls.length)
    problems.push(`holds characters a terminal acts on (${controls.map((c) => `"${escapeCharacter(c)}"`).join(', ')})`);
  if (!name.isWellFormed()) problems.push('holds half a character (a lone surrogate)');
  return problems;
}
