/**
 * The test tiers (test/tiers.ts) drop nothing: every test file under test/ is
 * placed in exactly one of FAST (`npm test`) and SLOW (the rest of
 * `npm run test:all`), FAST names only test files that exist, and the vitest
 * projects are built from these lists.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import config from '../../vitest.config.js';
import type { TestSpecification, Vitest } from 'vitest/node';
import { LongFirstSequencer } from '../sequencer.js';
import { FAST, SLOW, START_FIRST, tierGlobs } from '../tiers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every test file under test/, as a path from the repository root with `/` separators. */
function testFiles(): string[] {
  return readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `test/${name.split(sep).join('/')}`)
    .sort();
}

function covers(entry: string, file: string): boolean {
  return entry.endsWith('/') ? file.startsWith(entry) : file === entry;
}

function kind(entry: string): 'file' | 'folder' | 'missing' {
  try {
    return statSync(join(ROOT, entry)).isDirectory() ? 'folder' : 'file';
  } catch {
    return 'missing';
  }
}

describe('test tiers', () => {
  it('places every test file under test/ in exactly one tier', () => {
    const problems: string[] = [];
    for (const file of testFiles()) {
      const fast = FAST.filter((entry) => covers(entry, file));
      const slow = SLOW.filter((entry) => covers(entry, file));
      const count = fast.length + slow.length;
      if (count === 0) problems.push(`${file} is in no tier: add it to FAST or SLOW in test/tiers.ts`);
      if (count > 1)
        problems.push(
          `${file} is placed ${count} times: ${[...fast.map((e) => `FAST ${e}`), ...slow.map((e) => `SLOW ${e}`)].join(', ')}`,
        );
    }
    expect(problems).toEqual([]);
  });

  it('FAST names test files that exist, one by one; SLOW names test files or folders that exist', () => {
    const problems: string[] = [];
    for (const entry of FAST) {
      if (!entry.startsWith('test/') || !entry.endsWith('.test.ts') || kind(entry) !== 'file')
        problems.push(`FAST: ${entry} is not a test file under test/`);
    }
    for (const entry of SLOW) {
      const want = entry.endsWith('/') ? 'folder' : 'file';
      if (!entry.startsWith('test/') || kind(entry) !== want || (want === 'file' && !entry.endsWith('.test.ts')))
        problems.push(`SLOW: ${entry} is not a test ${want} under test/`);
    }
    for (const entry of new Set([...FAST, ...SLOW])) {
      if ([...FAST, ...SLOW].filter((e) => e === entry).length > 1) problems.push(`${entry} is listed more than once`);
    }
    expect(problems).toEqual([]);
  });

  it('the vitest projects are the tiers: fast runs FAST, slow every other test file', () => {
    const projects = (config.test?.projects ?? []) as {
      test: { name: string; include: string[]; exclude?: string[] };
    }[];
    expect(projects.map((p) => p.test.name)).toEqual(['fast', 'slow']);
    const [fast, slow] = projects.map((p) => p.test);
    expect(fast.include).toEqual(tierGlobs(FAST));
    expect(slow.include).toEqual(['test/**/*.test.ts']);
    expect(slow.exclude).toEqual(expect.arrayContaining(tierGlobs(FAST)));
  });

  it('START_FIRST names slow test files that exist, and the sequencer starts them first, in its order', async () => {
    for (const entry of START_FIRST) {
      expect(kind(entry), entry).toBe('file');
      expect(
        SLOW.some((e) => covers(e, entry)),
        `${entry} is in SLOW`,
      ).toBe(true);
    }
    // vitest's own order with no timing cache: the largest file first
    const others = ['test/plane/bootstrap-dir.test.ts', 'test/ui/long-run.test.ts', 'test/machines/restore.test.ts'];
    const project = { name: 'slow', config: { root: ROOT, isolate: true, sequence: { groupOrder: 0 } } };
    const specs = [...others, ...[...START_FIRST].reverse()].map(
      (file, i) => ({ project, moduleId: join(ROOT, file), size: 1000 - i }) as unknown as TestSpecification,
    );
    const ctx = {
      config: { root: ROOT },
      cache: {
        getFileTestResults: () => undefined,
        getFileStats: (key: string) => ({
          size: (specs.find((s) => key.endsWith(relativeOf(s))) as never as { size: number }).size,
        }),
      },
    } as unknown as Vitest;
    const relativeOf = (s: TestSpecification) => s.moduleId.slice(ROOT.length);
    const order = (await new LongFirstSequencer(ctx).sort(specs)).map(relativeOf);
    expect(order).toEqual([...START_FIRST, ...others]);
  });
});
