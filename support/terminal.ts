/**
 * Text as it may be printed to a terminal. Every character a terminal acts on
 * (a control character or a reordering mark, shared/text.ts) can rewrite what
 * it shows around it (move the cursor, reverse `evil\u202egnp.exe` into
 * `evilexe.png`): ids, names and reasons come from other people, so each such
 * character is shown as a JSON-style escape. `--json` output is JSON, exact;
 * text output is escaped.
 */
import { escapeCharacter, TERMINAL_ACTIVE } from '../shared/text.js';

/** `s` with each character a terminal acts on as an escape (`\u001b`), line breaks and tabs too: one field of a line. */
export function printable(s: string): string {
  return s.replace(TERMINAL_ACTIVE, escapeCharacter);
}

/** A whole line of a command's output, as a backstop to escaping its fields: its own line breaks and tabs kept (a message may span lines). */
export function terminalSafe(line: string): string {
  return line.replace(TERMINAL_ACTIVE, (c) => (c === '\n' || c === '\t' ? c : escapeCharacter(c)));
}
