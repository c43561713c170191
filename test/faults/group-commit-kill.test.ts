/**
 * Durability of the SQLite group commit under SIGKILL: a real child process
 * whose 12 runs put at once is killed inside a coalesced commit (every put of
 * the batch written, its COMMIT not run) or right after one (committed, no put
 * of it acknowledged yet). Afterwards every acknowledged put is stored, no
 * stored row was lost or reordered, and a batch that never committed left
 * nothing behind.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = new URL('./group-commit-child.ts', import.meta.url).pathname;
const WRITERS = 12;
const PUTS = 40;
const tmp = scratchDir('waymark-group-commit-');
afterAll(() => tmp.cleanup());

async function killedAt(point: string, hits: number, db: string) {
  const r = await runTs(CHILD, [db, point, String(hits), String(WRITERS), String(PUTS)]);
  expect(r.signal, r.stderr).toBe('SIGKILL');
  const lines = r.stdout.trim().split('\n');
  const acked = lines
    .filter((l) => l.startsWith('ack '))
    .map((l) => {
      const [, executionId, seq, id] = l.split(' ');
      return { executionId, seq: Number(seq), id };
    });
  const commits = lines.filter((l) => l.startsWith('commit ')).map((l) => Number(l.split(' ')[1]));
  return { acked, commits };
}

/** Every acknowledged put is stored at its seq; each run's rows are gap-free; at most `unacked` rows per run beyond the acknowledged ones. */
async function check(
  db: string,
  acked: { executionId: string; seq: number; id: string }[],
  unacked: 'none' | 'at most one',
) {
  const store = new SqliteCheckpointer({ path: db });
  try {
    expect(store.integrityCheck()).toBe('ok');
    let stored = 0;
    for (let w = 0; w < WRITERS; w++) {
      const executionId = `gc-${w}`;
      const rows = await store.list(executionId);
      stored += rows.length;
      expect(rows.map((r) => r.seq)).toEqual([...rows.keys()]);
      const mine = acked.filter((a) => a.executionId === executionId);
      expect(rows.slice(0, mine.length).map((r) => [r.seq, r.id])).toEqual(mine.map((a) => [a.seq, a.id]));
      expect(rows.length - mine.length).toBeLessThanOrEqual(unacked === 'none' ? 0 : 1);
      // the run goes on from its newest row, whichever that is
      if (rows.length) {
        const last = rows[rows.length - 1];
        expect((await store.readState(last)).turn).toBe(last.turn);
        const next = await store.put({
          executionId,
          prevId: last.id,
          nodeId: 'after',
          turn: rows.length,
          step: 'llm_call',
          status: 'completed',
          agentPath: 'agent:gc',
          state: { turn: rows.length },
        });
        expect(next.seq).toBe(rows.length);
      }
    }
    // each stored row has its outbox event (the two were one savepoint), plus the rows written above
    expect((await store.outboxStats()).pendingCount).toBe(stored + WRITERS);
    return stored;
  } finally {
    await store.close();
  }
}

describe('group commit under SIGKILL (SQLite, synchronous=FULL)', () => {
  it('killed inside a coalesced commit, before its COMMIT: every acknowledged put is stored, nothing of the batch is', async () => {
    const db = tmp.file('before.db');
    const { acked, commits } = await killedAt('store.groupCommit.beforeCommit', 6, db);
    expect(commits).toHaveLength(6);
    // the batch killed held a put of every run (they all waited on it)
    expect(commits[5]).toBe(WRITERS);
    expect(acked.length).toBeGreaterThan(0);
    const stored = await check(db, acked, 'none');
    expect(stored).toBe(acked.length);
  });

  it('killed right after a coalesced COMMIT, before any of its puts answered: the batch is stored whole, the acknowledged puts before it too', async () => {
    const db = tmp.file('after.db');
    // the first row of the 5th batch of 12 (the first batches may be smaller while the runs start)
    const { acked } = await killedAt('store.put.afterCommit', WRITERS * 4 + 1, db);
    const stored = await check(db, acked, 'at most one');
    // the 5th batch: one put of every run, committed, none acknowledged
    expect(stored).toBe(acked.length + WRITERS);
  });
});
