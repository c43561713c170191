/**
 * Text as it may be printed to a terminal. C0 and C1 controls, DEL, the line
 * and paragraph separators and the bidi marks, embeddings, overrides and
 * isolates can each rewrite what a terminal shows around them (move the
 * cursor, reverse `evil\u202egnp.exe` into `evilexe.png`): ids, names and
 * reasons come from other people, so every such character is shown as a
 * JSON-style escape. `--json` output is JSON, exact; text output is escaped.
 */

const CONTROL = '[\\p{Cc}\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]';

const EVERY = new RegExp(CONTROL, 'gu');

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `s` with each character a terminal acts on as an escape (`\u001b`), line breaks and tabs too: one field of a line. */
export function printable(s: string): string {
  return s.replace(EVERY, escaped);
}

/** Each character a terminal acts on, once, in order of appearance. */
export function terminalControls(s: string): string[] {
  return [...new Set(s.match(EVERY) ?? [])];
}

/** A whole line of a command's output, as a backstop to escaping its fields: its own line breaks and tabs kept (a message may span lines). */
export function terminalSafe(line: string): string {
  return line.replace(EVERY, (c) => (c === '\n' || c === '\t' ? c : escaped(c)));
}
