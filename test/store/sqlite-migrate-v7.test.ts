/**
 * A store file written by waymark at schema version 6 (test/fixtures/store-v6.db,
 * made by test/fixtures/make-store-v6.ts: every event in the outbox table, three
 * acknowledged, one quarantined, five waiting) opens under the current code:
 * migration 7 moves each checkpoint's event onto its row, and nothing changes for
 * the drain, the operator or the runs.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, test } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { OutboxStats, QuarantinedEntry } from '../../client/checkpointer.js';
import { MIGRATIONS } from '../../client/store/migrations.js';
import { refundAgent } from '../fixtures/refund-agent.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-sqlite-migrate-v7-');
afterAll(() => tmp.cleanup());

const fixture = JSON.parse(readFileSync(new URL('../fixtures/store-v6.json', import.meta.url), 'utf8')) as {
  pending: { id: string; kind: string; executionId: string; bytes: number }[];
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
  }));

describe('sqlite schema migration 6 → 7: a checkpoint is its own outbox entry', () => {
  test('the waiting events, their order, sizes and stats, the quarantine and what the plane holds are kept', async () => {
    const store = openCopy('kept.db');
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(store.integrityCheck()).toBe('ok');
    expect(await pendingOf(store)).toEqual(fixture.pending);
    // every waiting checkpoint event is on its row now; the outbox keeps the other kinds and the quarantine's reason
    const moved = fixture.pending.filter((e) => e.kind === 'checkpoint').map((e) => e.id);
    expect(db.prepare(`SELECT id FROM checkpoints WHERE event_seq > 0 ORDER BY event_seq`).pluck().all()).toEqual(
      moved,
    );
    expect(db.prepare(`SELECT kind FROM outbox WHERE synced = 0 ORDER BY seq`).pluck().all()).toEqual([
      'interrupt_opened',
    ]);
    const stats = await store.outboxStats();
    const { oldestPendingAt, oldestPendingAgeMs: _, ...rest } = stats;
    const { oldestPendingAt: wasAt, oldestPendingAgeMs: __, ...was } = fixture.stats;
    expect(rest).toEqual(was);
    // a checkpoint event's time is now its row's, written a moment before version 6 queued it
    expect(Math.abs(Date.parse(oldestPendingAt!) - Date.parse(wasAt!))).toBeLessThan(1000);
    expect(await store.listQuarantined()).toEqual(fixture.quarantined);
    // acknowledged rows still say the plane holds the run; a run none of whose rows were sent is still local
    expect(await store.heldByPlane('refund-done')).toBe(true);
    expect(await store.heldByPlane('refund-paused')).toBe(false);
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

  test('an older waymark writing the upgraded file is refused with SCHEMA_NEWER and changes nothing; this one deletes a waiting run', async () => {
    const store = openCopy('older.db');
    const db = store.connection;
    const before = await pendingOf(store);
    // what version 6 sends for a step's event and for deleting a run, as it sends them
    const queueAsV6 = () =>
      db
        .prepare(
          `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, 'checkpoint', ?, NULL, 10, ?)`,
        )
        .run(fixture.pending[1].id, 'refund-paused', new Date().toISOString());
    expect(queueAsV6).toThrow(/^SCHEMA_NEWER: this store file was upgraded by a newer waymark/);
    expect(() => db.prepare(`DELETE FROM checkpoints WHERE execution_id = ?`).run('refund-paused')).toThrow(
      /^SCHEMA_NEWER: .*upgrade this process to delete its runs/,
    );
    expect(await pendingOf(store)).toEqual(before);
    // a restored row's mark and a quarantine's reason, which version 6 also writes as synced outbox rows, still go in
    expect(() =>
      db
        .prepare(
          `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at, synced) VALUES ('r-1', 'checkpoint', 'x', NULL, 0, 'now', 1)`,
        )
        .run(),
    ).not.toThrow();
    // this version deletes the paused run with its waiting rows, and queues the deletion
    await store.deleteExecution('refund-paused');
    expect((await pendingOf(store)).map((e) => `${e.kind}:${e.executionId}`)).toEqual([
      'checkpoint:refund-done',
      'execution_deleted:refund-paused',
    ]);
    expect(store.integrityCheck()).toBe('ok');
    await store.close();
  });
});
