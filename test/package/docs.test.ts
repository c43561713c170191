/**
 * The docs stay readable and connected: the README is the front page (what
 * waymark is, the two commands, the quick start, the concepts and the links),
 * so it stays short; the walkthroughs live in docs/GUIDE.md and the plane's
 * operation in docs/OPERATIONS.md; every relative link among them leads
 * somewhere.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDoc } from '../helpers/docs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** README.md and every Markdown file in docs/, as paths from the repository root. */
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The docs whose headings the link check holds anchors to (the ones a reader starts from). */
const ANCHORED = new Set(['README.md', 'docs/GUIDE.md', 'docs/OPERATIONS.md']);

/** The text outside fenced code blocks, where a `](…)` is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** The anchors GitHub makes of a doc's headings: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe('docs', () => {
  it('README.md is at most 400 lines and opens with the two commands', () => {
    const readme = readDoc('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
    const first = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(first.split('\n').map((l) => l.replace(/\s+#.*$/, ''))).toEqual(
      expect.arrayContaining(['npm ci && npm start', 'npm ci && npm test', 'npm run test:all']),
    );
  });

  it('every relative link in README.md and docs/*.md names a file that exists (and a heading, into the three front docs)', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const doc of DOCS) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // https:, mailto:
        checked++;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? join(ROOT, doc) : join(ROOT, dirname(doc), decodeURI(path));
        if (!existsSync(file)) {
          broken.push(`${doc}: ${target} (no file ${relative(ROOT, file)})`);
          continue;
        }
        const into = relative(ROOT, file).split('\\').join('/');
        if (anchor && ANCHORED.has(into) && !anchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${doc}: ${target} (no heading '#${anchor}' in ${into})`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(10);
  });
});

describe('error tables', () => {
  /** The codes the run-request routes answer (plane/requests.ts, plane/routes/requests.ts). */
  const REQUEST_CODES = [
    'INVALID_RUN_REQUEST',
    'RUN_NOT_FAILED',
    'RUN_NOT_STALE',
    'NOT_FORKABLE',
    'REQUEST_OPEN',
    'REQUEST_NOT_FOUND',
  ];
  it.each(['docs/GUIDE.md', 'docs/OPERATIONS.md'])('%s lists every code a run request is answered with', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const errors = text.slice(text.indexOf('\n## Errors'));
    expect(REQUEST_CODES.filter((c) => !new RegExp(`^\\| \`${c}\` +\\|`, 'm').test(errors))).toEqual([]);
  });
});
