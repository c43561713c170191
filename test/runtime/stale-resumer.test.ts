/**
 * Issue 12 item 1, with real processes: resumer A reads pause P1 and is held
 * in its claim guard; resumer B (another process) answers P1, runs its tool
 * and reaches pause P2; A's claim then names P1, which is gone: A gets
 * AlreadyResumed, P2 stays open, and P1's tool ran once, with B's answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import type { Checkpointer } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { Ledger } from '../../examples/agents/refund.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';
import { deployAgent } from './stale-resumer-agent.js';

const CHILD = fileURLToPath(new URL('./stale-resumer-child.ts', import.meta.url));
const tmp = scratchDir('waymark-stale-resumer-');
afterAll(() => tmp.cleanup());

type Done = {
  type: 'done';
  result?: { status: string; pendingInterrupt: { reason: string } | null };
  error?: { code: string | null; message: string };
};

async function staleResumer(spec: string, store: Checkpointer, ledger: Ledger): Promise<void> {
  const id = `stale-${Date.now().toString(36)}`;
  const first = await deployAgent(store, ledger).run('ship it', { executionId: id });
  expect(first.status).toBe('paused');
  const p1 = first.pendingInterrupt!;
  expect(p1.reason).toBe('deploy to prod?');

  // A reads P1 and is held in its claim guard
  const a = forkTs(CHILD, [spec, ledger.path, id, 'false', 'hold']);
  let aErr = '';
  a.stderr?.on('data', (d) => (aErr += d));
  try {
    const held = await nextMessage<{ type: string; pause: { checkpointId: string } }>(a, (m) => m.type === 'held');
    expect(held.pause.checkpointId).toBe(p1.checkpointId);

    // B answers P1 in another process and reaches P2
    const b = forkTs(CHILD, [spec, ledger.path, id, 'true']);
    const bOut = await nextMessage<Done>(b, (m) => m.type === 'done');
    await once(b, 'exit');
    expect(bOut.result).toMatchObject({
      status: 'paused',
      pendingInterrupt: { reason: 'drop the production database?' },
    });
    const p2 = await store.getPendingInterrupt(id);
    expect(p2?.reason).toBe('drop the production database?');
    const rowsBefore = await store.list(id);

    // A goes on: its claim of P1 must fail, and must not take P2
    const answer = nextMessage<Done>(a, (m) => m.type === 'done');
    a.send({ type: 'go' });
    const aOut = await answer;
    expect(aOut.error?.code, `${JSON.stringify(aOut)} ${aErr}`).toBe('ALREADY_RESUMED');
    await once(a, 'exit').catch(() => {});

    expect(await store.getPendingInterrupt(id)).toEqual(p2);
    expect(await store.list(id)).toEqual(rowsBefore);
    expect(ledger.entries().map((e) => e.order)).toEqual(['deploy:prod:approved=true']);
  } finally {
    if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
  }
}

const pg = await pgReady('stale resumer: postgres');

describe('stale resumer defect: a resumer that read an answered pause gets AlreadyResumed, never the later pause', () => {
  it('sqlite: two processes on one file', async () => {
    const path = tmp.file('stale.db');
    const store = new SqliteCheckpointer({ path });
    try {
      await staleResumer(`sqlite:${path}`, store, new Ledger(tmp.file('ledger-sqlite.jsonl')));
    } finally {
      await store.close();
    }
  });

  describe.skipIf(!pg)('postgres', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase('waymark_stale');
    });
    afterAll(async () => db?.drop());
    it('postgres: two processes on one database', async () => {
      const store = new PostgresCheckpointer({ url: db.url, schema: 'stale', max: 4 });
      await store.setup();
      try {
        await staleResumer(`postgres:${db.url}#stale`, store, new Ledger(tmp.file('ledger-pg.jsonl')));
      } finally {
        await store.close();
      }
    });
  });
});
