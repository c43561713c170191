/**
 * The docs stay readable: the README is the front page (what waymark is, the
 * two commands, the quick start, the concepts and the links), so it stays
 * short; the walkthroughs live in docs/GUIDE.md and the plane's operation in
 * docs/OPERATIONS.md.
 */
import { describe, expect, it } from 'vitest';
import { readDoc } from '../helpers/docs.js';

describe('docs', () => {
  it('README.md is at most 400 lines and opens with the two commands', () => {
    const readme = readDoc('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
    const first = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(first.split('\n').map((l) => l.replace(/\s+#.*$/, ''))).toEqual(
      expect.arrayContaining(['npm ci && npm start', 'npm ci && npm test', 'npm run test:all']),
    );
  });
});
