import { afterAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = fileURLToPath(new URL('./sqlite-child.ts', import.meta.url));
const tmp = scratchDir('waymark-sqlite-race-');
afterAll(() => tmp.cleanup());

async function startChildren(path: string, n: number): Promise<ChildProcess[]> {
  const kids = Array.from({ length: n }, () => forkTs(CHILD, [path]));
  await Promise.all(kids.map((k) => nextMessage(k, (m: { type: string }) => m.type === 'ready')));
  return kids;
}

async function stopChildren(kids: ChildProcess[]): Promise<void> {
  await Promise.all(
    kids.map(
      (k) =>
        new Promise<void>((resolve) => {
          if (k.exitCode !== null) return resolve();
          k.once('exit', () => resolve());
          k.send({ type: 'exit' });
        }),
    ),
  );
}

describe('sqlite across real processes', () => {
  it('16 child processes race for one pause, 200 rounds: exactly one winner every round', async () => {
    const path = tmp.file('claims.db');
    const store = new SqliteCheckpointer({ path });
    const kids = await startChildren(path, 16);
    try {
      const winnersPerRound: number[] = [];
      for (let round = 0; round < 200; round++) {
        const executionId = `race-${round}`;
        const { pending } = await store.recordInterrupt(
          {
            executionId,
            nodeId: 'turn:0/tool:refund',
            turn: 0,
            step: 'hitl_pause',
            status: 'interrupted',
            agentPath: 'agent:race/tool:refund',
            state: { messages: [] },
          },
          { reason: 'approval', context: { round } },
        );
        const answers = kids.map((k) =>
          nextMessage<{ type: string; round: number; won: boolean }>(
            k,
            (m) => m.type === 'claimed' && m.round === round,
          ),
        );
        for (const k of kids) k.send({ type: 'claim', executionId, checkpointId: pending.checkpointId, round });
        const results = await Promise.all(answers);
        winnersPerRound.push(results.filter((r) => r.won).length);
      }
      expect(winnersPerRound.filter((w) => w !== 1)).toEqual([]);
      expect(winnersPerRound.length).toBe(200);
      const stats = await store.outboxStats();
      // 200 pauses: checkpoint + opened each; 200 claims
      expect(stats.pendingCount).toBe(600);
    } finally {
      await stopChildren(kids);
      await store.close();
    }
  });

  it('two processes writing the same executions at once lose no row and keep seq gap-free', async () => {
    const path = tmp.file('writers.db');
    const store = new SqliteCheckpointer({ path });
    const kids = await startChildren(path, 2);
    const executions = ['w-0', 'w-1', 'w-2', 'w-3', 'w-4'];
    try {
      const done = kids.map((k) =>
        nextMessage<{ type: string; ids: string[]; message?: string }>(k, (m) => m.type !== 'ready'),
      );
      for (const k of kids) k.send({ type: 'write', count: 400, executions });
      const results = await Promise.all(done);
      for (const r of results) expect(r.type, r.message).toBe('written');
      const written = new Set(results.flatMap((r) => r.ids));
      expect(written.size).toBe(800);
      let stored = 0;
      const writersSeen = new Set<string>();
      for (const e of executions) {
        const rows = await store.list(e);
        expect(rows.map((r) => r.seq)).toEqual([...rows.keys()]);
        for (const r of rows) {
          expect(written.has(r.id)).toBe(true);
          writersSeen.add(r.agentPath);
          // every row decodes through its delta chain, interleaved writers and all
          expect(((await store.readState(r)).messages as unknown[]).length).toBe(1);
        }
        stored += rows.length;
      }
      expect(stored).toBe(800);
      expect(writersSeen.size).toBe(2);
      expect(store.integrityCheck()).toBe('ok');
    } finally {
      await stopChildren(kids);
      await store.close();
    }
  });
});
