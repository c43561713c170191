/**
 * A LangGraph run on WaymarkSaver SIGKILLed right after a task's writes
 * commit (fault point store.idempotency.afterCommit, in a real child process)
 * resumes in a new process from its rows: no model call and no tool call that
 * committed runs again, and the run finishes as it would have.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = new URL('./crash-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-lg-crash-');
afterAll(() => tmp.cleanup());

describe('a LangGraph run on WaymarkSaver killed after a commit', () => {
  // putWrites commits: the graph input, then model 0, tool 0, model 1, tool 1, …
  for (const [hit, what] of [
    [4, 'the second model call'],
    [5, 'the second tool call'],
  ] as const) {
    it(`killed right after ${what} committed its writes, resumes in a new process without repeating a committed step`, async () => {
      const T = 3;
      const db = tmp.file(`crash-${hit}.db`);
      const effects = tmp.file(`effects-${hit}.log`);
      writeFileSync(effects, '');
      const a = await runTs(CHILD, ['run', db, effects, String(T), String(hit)]);
      expect(a.signal).toBe('SIGKILL');
      const b = await runTs(CHILD, ['resume', db, effects, String(T)]);
      expect(b.code, b.stderr).toBe(0);
      const report = JSON.parse(b.stdout.trim().split('\n').at(-1)!);
      expect(report.messages).toEqual([
        'human: go',
        ...Array.from({ length: T }, (_, i) => ['ai: ', `tool: did ${i}`]).flat(),
        'ai: finished',
      ]);
      const lines = readFileSync(effects, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' ').slice(0, 2).join(' '));
      const expected = [...Array.from({ length: T }, (_, i) => [`model ${i}`, `tool ${i}`]).flat(), `model ${T}`];
      // every step ran exactly once across the two processes
      expect(lines).toEqual(expected);
      // and the ones that committed before the kill ran in the first process
      const pids = readFileSync(effects, 'utf8')
        .trim()
        .split('\n')
        .map((l) => Number(l.split(' ')[2]));
      const first = pids[0];
      expect(pids.slice(0, hit - 1)).toEqual(Array(hit - 1).fill(first));
      expect(pids.slice(hit - 1)).toEqual(Array(pids.length - hit + 1).fill(report.pid));
    });
  }
});
