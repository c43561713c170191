/**
 * The repository's docs as the flow tests read them: README.md holds the
 * quick start, docs/GUIDE.md the library's walkthroughs, docs/OPERATIONS.md
 * the plane's. A test pastes a flow from the file where it lives.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The docs the flows live in, by the path a reader opens. */
export type Doc = 'README.md' | 'docs/GUIDE.md' | 'docs/OPERATIONS.md';

/** The text of one doc. */
export function readDoc(doc: Doc): string {
  return readFileSync(join(ROOT, doc), 'utf8');
}

/**
 * The part of `text` under the heading line `heading` (say `## Approvals`),
 * its subsections included, up to the next heading of its level or above.
 * Throws when no line is exactly that heading.
 */
export function docSection(text: string, heading: string): string {
  const lines = text.split('\n');
  const at = lines.indexOf(heading);
  if (at < 0) throw new Error(`no heading '${heading}'`);
  const level = /^#+/.exec(heading)![0].length;
  let fenced = false;
  let end = lines.length;
  for (let i = at + 1; i < lines.length; i++) {
    if (lines[i]!.startsWith('```')) fenced = !fenced;
    const h = /^(#+) /.exec(lines[i]!);
    if (!fenced && h && h[1]!.length <= level) {
      end = i;
      break;
    }
  }
  return lines.slice(at, end).join('\n');
}
