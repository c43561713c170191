/**
 * docs/RELIABILITY.md and docs/DECISIONS.md point at the code: every file or
 * folder of the repository they name exists, every promise in RELIABILITY.md
 * names a test file that shows it, and DECISIONS.md states decisions rather
 * than their history (no issue or session numbers, no reviewers' finds).
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (doc: string) => readFileSync(join(ROOT, doc), 'utf8');

/** A repository path in backticks: a file under one of the rooms, or a room's folder (ending in `/`). */
const REPO_PATH =
  /`((?:bench|bin|client|docs|drizzle|examples|inspector|plane|shared|support|test)\/(?:[\w.-]+\/)*(?:[\w.-]+\.(?:ts|tsx|mjs|md|sql))?)`/g;

/** Every repository path the document names in backticks, each once. */
function pathsIn(text: string): string[] {
  return [...new Set([...text.matchAll(REPO_PATH)].map((m) => m[1]))];
}

/** Where a test is: a test file, a suite a test file runs, or a proof the proofs test runs. */
const TEST_PATH = /`(?:test|client\/testing|examples)\/[^`]+\.ts`/;

/** The rows of the promise tables: every table row between `## Promises` and the next `## ` heading, but headers and rules. */
function promiseRows(text: string): string[] {
  const start = text.indexOf('\n## Promises\n');
  const end = text.indexOf('\n## ', start + 1);
  return text
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line) && !/^\|\s*(#|promise|Promise)\s*\|/.test(line));
}

/** The text of every test source: test/ and the conformance suites users run (client/testing/). */
function testSources(): string {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : /\.tsx?$/.test(name) ? [path] : [];
    });
  return [...walk(join(ROOT, 'test')), ...walk(join(ROOT, 'client/testing'))]
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');
}

describe('docs/RELIABILITY.md', () => {
  const text = read('docs/RELIABILITY.md');

  it('names only files and folders that exist', () => {
    const paths = pathsIn(text);
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('has promises, and every promise names a test file in its last column', () => {
    const rows = promiseRows(text);
    expect(rows.length).toBeGreaterThan(50);
    const untested = rows.filter((row) => {
      const cells = row.split(' | ');
      return !TEST_PATH.test(cells[cells.length - 1]);
    });
    expect(untested.map((row) => row.slice(0, 120))).toEqual([]);
  });

  it('quotes test titles that exist: every quoted piece of a title (split at …) is in a test source', () => {
    const sources = testSources();
    const pieces = promiseRows(text).flatMap((row) => {
      const cells = row.split(' | ');
      const tests = cells[cells.length - 1];
      // a title is quoted after `›` or in a list, in double quotes or backticks, and reads as a sentence
      return [...tests.matchAll(/(?:›|:|,|;)\s*(?:"([^"]+)"|`([^`]+)`)/g)]
        .map((m) => m[1] ?? m[2])
        .filter((title) => title.split(' ').length >= 5)
        .flatMap((title) => title.split(/…|›/).map((piece) => piece.trim()))
        .filter((piece) => piece.length >= 15);
    });
    expect(pieces.length).toBeGreaterThan(100);
    expect(pieces.filter((piece) => !sources.includes(piece))).toEqual([]);
  });

  it('keeps a section for what is not yet tested and one for what is not promised', () => {
    expect(text).toContain('\n## Not yet tested\n');
    expect(text).toContain('\n## What waymark does not promise\n');
  });

  it('heads its sections by subject, not by issue', () => {
    const headings = text.split('\n').filter((line) => line.startsWith('#'));
    expect(headings.filter((h) => /\bissue\b/i.test(h))).toEqual([]);
  });
});

describe('docs/DECISIONS.md', () => {
  const text = read('docs/DECISIONS.md');

  it('names only files and folders that exist', () => {
    const paths = pathsIn(text);
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('states decisions, not their history', () => {
    const history = /\b(?:issue \d+|issues? #?\d+|session \d+|reviewer|found by|a reviewer's)/gi;
    expect([...text.matchAll(history)].map((m) => m[0])).toEqual([]);
  });

  it('gives every decision its why on the next line', () => {
    const lines = text.split('\n');
    const decisions = lines
      .map((line, i) => ({ line, next: lines[i + 1] ?? '' }))
      .filter(({ line }) => line.startsWith('- **'));
    expect(decisions.length).toBeGreaterThan(100);
    const whyless = decisions
      .filter(({ next }) => !next.trimStart().startsWith('Why:'))
      .map(({ line }) => line.slice(0, 100));
    expect(whyless).toEqual([]);
  });
});
