/**
 * Text as it may be printed to a terminal. C0 and C1 controls, DEL, the line
 * and paragraph separators and the bidi embeddings, overrides and isolates can
 * each rewrite what a terminal shows around them (move the cursor, reverse
 * `evil\u202egnp.exe` into `evilexe.png`): ids, names and reasons come from
 * other people, so every such character is shown as a JSON-style escape.
 */

/** What a terminal acts on, and what no name shown in one may hold. */
export const TERMINAL_CONTROL = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `s` with each character of TERMINAL_CONTROL as an escape (`\u001b`). */
export function printable(s: string): string {
  return s.replace(TERMINAL_CONTROL, escaped);
}

/** A line of a command's output: as `printable`, but its own line breaks and tabs kept (a message may span lines). */
export function terminalSafe(line: string): string {
  return line.replace(TERMINAL_CONTROL, (c) => (c === '\n' || c === '\t' ? c : escaped(c)));
}
