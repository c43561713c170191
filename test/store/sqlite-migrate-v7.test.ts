/**
 * A store file written by waymark at schema version 6 (test/fixtures/store-v6.db,
 * made by test/fixtures/make-store-v6.ts: every event in the outbox table,
 * acknowledged, quarantined, restored and waiting, one waiting event's row gone)
 * opens under the current code: migration 7 moves each waiting checkpoint event
 * onto its row, and nothing changes for the drain, the operator or the runs.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, test } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { OutboxStats, QuarantinedEntry } from '../../client/checkpointer.js';
import { MIGRATIONS } from '../../client/store/migrations.js';
import { input } from '../../client/testing/store/harness.js';
import { refundAgent } from '../fixtures/refund-agent.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-sqlite-migrate-v7-');
afterAll(() => tmp.cleanup());

const fixture = JSON.parse(readFileSync(new URL('../fixtures/store-v6.json', import.meta.url), 'utf8')) as {
  pending: { id: string; kind: string; executionId: string; bytes: number; problem: string | null }[];
  held: Record<string, boolean>;
  stats: OutboxStats;
  quarantined: QuarantinedEntry[];
  effects: string[];
};

function openCopy(name: string): SqliteCheckpointer {
  const path = tmp.file(name);
  copyFileSync(new URL('../fixtures/store-v6.db', import.meta.url), path);
  return new SqliteCheckpointer({ path });
}

const pendingOf = async (store: SqliteCheckpointer) =>
  (await store.fetchUnsynced({ limit: 1000, maxBytes: 1e9 })).map((e) => ({
    id: e.id,
    kind: e.kind,
    executionId: e.executionId,
    bytes: e.bytes,
    problem: e.problem ?? null,
  }));

describe('sqlite schema migration 6 → 7: a checkpoint is its own outbox entry', () => {
  test('the waiting events, their order, sizes and stats, the quarantine and what the plane holds are kept', async () => {
    const store = openCopy('kept.db');
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(store.integrityCheck()).toBe('ok');
    expect(await pendingOf(store)).toEqual(fixture.pending);
    // every waiting checkpoint event is on its row now; the outbox keeps the other kinds, the quarantine's reason, the
    // acknowledgements and restores of version 6, and the waiting event whose row is gone
    const moved = fixture.pending.filter((e) => e.kind === 'checkpoint' && !e.problem).map((e) => e.id);
    expect(db.prepare(`SELECT id FROM checkpoints WHERE event_seq > 0 ORDER BY event_seq`).pluck().all()).toEqual(
      moved,
    );
    expect(db.prepare(`SELECT kind FROM outbox_entries WHERE synced = 0 ORDER BY seq`).pluck().all()).toEqual([
      'interrupt_opened',
      'checkpoint',
      'idempotency',
    ]);
    const stats = await store.outboxStats();
    const { oldestPendingAt, oldestPendingAgeMs: _, ...rest } = stats;
    const { oldestPendingAt: wasAt, oldestPendingAgeMs: __, ...was } = fixture.stats;
    expect(rest).toEqual(was);
    // a checkpoint event's time is now its row's, written a moment before version 6 queued it
    expect(Math.abs(Date.parse(oldestPendingAt!) - Date.parse(wasAt!))).toBeLessThan(1000);
    expect(await store.listQuarantined()).toEqual(fixture.quarantined);
    // acknowledged rows still say the plane holds the run; a run none of whose rows were sent is still local
    for (const [run, held] of Object.entries(fixture.held))
      expect([run, await store.heldByPlane(run)]).toEqual([run, held]);
    expect(fixture.held).toEqual({ 'refund-done': true, 'refund-paused': false, 'refund-restored': true });
    await store.close();
  });

  test('the paused run resumes once, its new events queue after the old, and the drain empties both tables in order', async () => {
    const store = openCopy('resumed.db');
    const charged: string[] = [];
    const agent = refundAgent(store, (order) => charged.push(order));
    const r = await agent.resume('refund-paused', { approved: true });
    expect(r.status).toBe('completed');
    // the approved refund charged once; the finished run's charge (before the upgrade) is not repeated
    expect(charged).toEqual(['1042']);
    await expect(agent.resume('refund-paused', { approved: true })).rejects.toMatchObject({ code: 'ALREADY_RESUMED' });
    const pending = await pendingOf(store);
    expect(pending.slice(0, fixture.pending.length)).toEqual(fixture.pending);
    const added = pending.slice(fixture.pending.length);
    expect(new Set(added.map((e) => e.kind))).toEqual(new Set(['checkpoint', 'interrupt_claimed', 'idempotency']));
    // the run's new rows in their seq order, each after the events written before it
    const rows = await store.list('refund-paused');
    const newRows = rows.filter((c) => added.some((e) => e.id === c.id));
    expect(added.filter((e) => e.kind === 'checkpoint').map((e) => e.id)).toEqual(newRows.map((c) => c.id));
    expect(newRows.at(-1)?.step).toBe('run_end');
    // the drain acknowledges page by page, oldest first, until nothing waits in either table
    const sent: string[] = [];
    for (;;) {
      const page = await store.fetchUnsynced({ limit: 3, maxBytes: 1e9 });
      if (!page.length) break;
      sent.push(...page.map((e) => e.id));
      await store.applyResults({ synced: page.map((e) => e.id), quarantined: {} });
    }
    expect(sent).toEqual(pending.map((e) => e.id));
    expect((await store.outboxStats()).pendingCount).toBe(0);
    expect(await store.heldByPlane('refund-paused')).toBe(true);
    expect(store.integrityCheck()).toBe('ok');
    await store.close();
  });

  test('statements of an older waymark that queue, drain, prune or ask what the plane holds fail on the upgraded file; this one deletes a waiting run', async () => {
    const store = openCopy('older.db');
    const db = store.connection;
    const before = await pendingOf(store);
    // statements of version 6, as it sends them: a step's event, its drain's read, prune's candidates, heldByPlane
    const v6 = [
      `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES ('x', 'checkpoint', 'refund-paused', NULL, 10, 'now')`,
      `SELECT o.seq FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id WHERE o.synced = 0 ORDER BY o.seq LIMIT 10`,
      `SELECT EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 0 WHERE c.execution_id = 'refund-done')`,
      `SELECT EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 1 AND o.sync_error IS NULL WHERE c.execution_id = 'refund-done')`,
    ];
    for (const text of v6) expect(() => db.prepare(text).all()).toThrow(/no such table: outbox/);
    expect(await pendingOf(store)).toEqual(before);
    // this version deletes the paused run with its waiting rows, and queues the deletion
    await store.deleteExecution('refund-paused');
    expect((await pendingOf(store)).map((e) => `${e.kind}:${e.executionId}`)).toEqual([
      'checkpoint:refund-done',
      'checkpoint:orphan',
      'idempotency:refund-done',
      'execution_deleted:refund-paused',
    ]);
    expect(store.integrityCheck()).toBe('ok');
    await store.close();
  });
  test('two stores on one file write in turn: either drains their events merged in the order written', async () => {
    const path = tmp.file('shared.db');
    const one = new SqliteCheckpointer({ path });
    const two = new SqliteCheckpointer({ path });
    const row = (executionId: string, turn: number) => input(executionId, { nodeId: `turn:${turn}`, turn });
    // an uneven pattern from both connections, ending with a checkpoint then another kind: a place drawn from one
    // table's count alone ties or falls behind the other's
    const written: string[] = [];
    const checkpoint = async (store: SqliteCheckpointer, run: string, turn: number) =>
      written.push((await store.put(row(run, turn))).id);
    const entry = async (store: SqliteCheckpointer, run: string, key: string) => {
      await store.putIdempotent(run, key, key);
      written.push(`idempotency:${run}:${key}`);
    };
    await checkpoint(one, 'a', 0);
    await checkpoint(one, 'a', 1);
    await entry(two, 'b', 'k0');
    await entry(two, 'b', 'k1');
    await entry(one, 'a', 'k0');
    await checkpoint(two, 'b', 0);
    await entry(two, 'b', 'k2');
    await checkpoint(one, 'a', 2);
    await checkpoint(two, 'b', 1);
    await entry(one, 'a', 'k1');
    const label = (e: { kind: string; id: string; event: unknown }) => {
      if (e.kind === 'checkpoint') return e.id;
      const { row } = e.event as { row: { executionId: string; key: string } };
      return `${e.kind}:${row.executionId}:${row.key}`;
    };
    expect((await two.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map(label)).toEqual(written);
    await one.close();
    await two.close();
  });
});
