/**
 * Issue 12 items 4 and 5: restore (`importRows`, `restoreFromPlane`,
 * `waymark restore`) onto a store that already holds the run.
 *
 * Item 4: after an offline double claim, machine B holds its own branch
 * (…, P1, 3b) and the plane holds A's (…, P1, 3a, 4a). The import used to
 * record the (execution, 3) conflict and then insert 4a after 3b, moving the
 * execution onto a row whose snapshot delta follows 3a: CORRUPT_ROW on read,
 * and the newest row silently the other machine's branch.
 *
 * Item 5: B restored a run paused at P1; A answered P1 and reached P2. A second
 * restore on B kept B's pending row for P1 (the approver shown "deploy?" while
 * the answer is applied to P2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpointer, CheckpointInput, RestoreBundle } from '../../client/checkpointer.js';
import { main } from '../../client/cli/main.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { Json } from '../../shared/json.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-restore-divergence-');
afterAll(() => tmp.cleanup());
const pg = await pgReady('restore divergence: postgres');

let n = 0;
// a long first message, so later rows are snapshot deltas (the codec cuts a chain once it costs more than the full state)
const user = { role: 'user', content: `deploy, then clean up. ${'context '.repeat(300)}` };
const a1 = { role: 'assistant', content: null, toolCalls: [{ id: 'c0', name: 'deploy', arguments: {} }] };

function row(executionId: string, over: Partial<CheckpointInput> & { state: Record<string, Json> }): CheckpointInput {
  return {
    executionId,
    nodeId: 'turn:0',
    turn: 0,
    step: 'llm_call',
    status: 'completed',
    agentPath: 'agent:t',
    ...over,
  };
}
const pauseAt = (executionId: string, turn: number, messages: Json[]) =>
  row(executionId, {
    nodeId: `turn:${turn}/tool:deploy`,
    turn,
    step: 'hitl_pause',
    status: 'interrupted',
    agentPath: 'agent:t/tool:deploy',
    state: { messages, turn },
  });
const answer = (executionId: string, approved: boolean, messages: Json[]) =>
  row(executionId, {
    nodeId: 'turn:0/tool:deploy',
    step: 'tool_call',
    agentPath: 'agent:t/tool:deploy',
    state: { messages, turn: 0, resumes: [{ approved }] },
  });

async function bundleOf(store: Checkpointer, executionId: string): Promise<RestoreBundle> {
  return {
    checkpoints: await store.list(executionId),
    pending: await store.getPendingInterrupt(executionId),
    idempotency: await store.listIdempotent(executionId),
  };
}

/** Every row of the execution decodes, read by a fresh handle (no cursor cache). */
async function decodesAll(reopen: () => Promise<Checkpointer>, executionId: string): Promise<void> {
  const fresh = await reopen();
  try {
    for (const r of await fresh.list(executionId)) await fresh.readState(r);
  } finally {
    await fresh.close();
  }
}

interface Backend {
  name: string;
  /** A new, empty store, and a way to open a second handle on it. */
  make(): Promise<{ store: Checkpointer; reopen(): Promise<Checkpointer> }>;
}

function runDivergenceSuite(b: Backend): void {
  const open: Checkpointer[] = [];
  const make = async () => {
    const s = await b.make();
    await s.store.setup();
    open.push(s.store);
    return s;
  };
  afterAll(async () => {
    for (const s of open) await s.close();
  });

  /** A and B share rows 0..2 (P1 open on both); then both claim P1 offline: A reaches 4a, B writes 3b. */
  async function doubleClaim() {
    const id = `div-${++n}`;
    const A = (await make()).store;
    const Bh = await make();
    const B = Bh.store;
    await A.put(row(id, { state: { messages: [user], turn: 0 } }));
    await A.put(row(id, { nodeId: 'turn:0', state: { messages: [user, a1], turn: 0 } }));
    const { pending: p1 } = await A.recordInterrupt(pauseAt(id, 0, [user, a1]), {
      reason: 'deploy to prod?',
      context: null,
    });
    expect(await B.importRows(await bundleOf(A, id))).toMatchObject({ inserted: 3, pendingImported: true });
    const r3a = (await A.claimInterrupt(p1, { next: answer(id, true, [user, a1]) }))!.checkpoint!;
    const r4a = await A.put(
      row(id, {
        nodeId: 'turn:1',
        turn: 1,
        state: {
          messages: [user, a1, { role: 'tool', toolCallId: 'c0', name: 'deploy', content: 'deployed' }],
          turn: 1,
        },
      }),
    );
    const r3b = (await B.claimInterrupt(p1, { next: answer(id, false, [user, a1]) }))!.checkpoint!;
    return { id, A, B, reopenB: Bh.reopen, p1, r3a, r4a, r3b };
  }

  it('restore onto a diverged store defect: the import stops at the first taken seq, reports the execution diverged and grafts nothing after it', async () => {
    const { id, A, B, reopenB, r3a, r4a, r3b } = await doubleClaim();
    const before = await B.list(id);
    const outbox = (await B.outboxStats()).pendingCount;
    const res = await B.importRows(await bundleOf(A, id));
    expect(res).toMatchObject({
      inserted: 0,
      skipped: 3,
      diverged: [{ executionId: id, seq: 3, reason: 'seq_taken', localId: r3b.id, incomingId: r3a.id }],
      withheld: 2,
    });
    expect(await B.list(id)).toEqual(before);
    expect(await B.getById(r4a.id)).toBeNull();
    expect((await B.latest(id))?.id).toBe(r3b.id);
    expect((await B.outboxStats()).pendingCount).toBe(outbox);
    await decodesAll(reopenB, id);
    // B's own branch goes on, gap-free, after its own row
    const next = await B.put(
      row(id, {
        nodeId: 'turn:1',
        turn: 1,
        state: {
          messages: [user, a1, { role: 'tool', toolCallId: 'c0', name: 'deploy', content: 'not deployed' }],
          turn: 1,
        },
      }),
    );
    expect(next.seq).toBe(4);
    if (next.state.kind === 'delta') expect(next.state.prev).toBe(r3b.id);
    await decodesAll(reopenB, id);
  });

  it('restore onto a diverged store defect: a row whose predecessor differs here is not inserted even at a free seq', async () => {
    const { id, B, reopenB, r3a, r4a, r3b } = await doubleClaim();
    expect(r4a.state.kind).toBe('delta');
    if (r4a.state.kind === 'delta') expect(r4a.state.prev).toBe(r3a.id);
    // a bundle that starts after the branch point (seq 4 is free on B)
    const res = await B.importRows({ checkpoints: [r4a], pending: null, idempotency: [] });
    expect(res).toMatchObject({
      inserted: 0,
      diverged: [{ executionId: id, seq: 4, reason: 'predecessor_differs', localId: null, incomingId: r4a.id }],
      withheld: 1,
    });
    expect((await B.latest(id))?.id).toBe(r3b.id);
    await decodesAll(reopenB, id);
    // a full row with nothing to say what it follows is not grafted either
    const lone = {
      ...r4a,
      id: r4a.id.replace(/.$/, (c) => (c === '0' ? '1' : '0')),
      seq: 5,
      state: { v: 1 as const, kind: 'full' as const, state: { messages: [], turn: 9 } },
    };
    const res2 = await B.importRows({ checkpoints: [lone], pending: null, idempotency: [] });
    expect(res2.diverged).toEqual([
      { executionId: id, seq: 5, reason: 'no_predecessor', localId: null, incomingId: lone.id },
    ]);
    expect(await B.getById(lone.id)).toBeNull();
  });

  it("a second restore kept a stale local pause defect: a pending row whose checkpoint is no longer the newest is replaced by the bundle's pause", async () => {
    const id = `stale-${++n}`;
    const A = (await make()).store;
    const B = (await make()).store;
    await A.put(row(id, { state: { messages: [user], turn: 0 } }));
    const { pending: p1 } = await A.recordInterrupt(pauseAt(id, 0, [user, a1]), {
      reason: 'deploy to prod?',
      context: null,
    });
    const first = await bundleOf(A, id);
    expect(await B.importRows(first)).toMatchObject({ inserted: 2, pendingImported: true, stalePendingRemoved: [] });
    // re-importing the same bundle keeps the open pause: it is still the newest row's
    expect(await B.importRows(first)).toMatchObject({ inserted: 0, pendingImported: false, stalePendingRemoved: [] });
    expect(await B.getPendingInterrupt(id)).toEqual(p1);
    // A answers P1 and reaches P2
    await A.claimInterrupt(p1, { next: answer(id, true, [user, a1]) });
    const tool = { role: 'tool', toolCallId: 'c0', name: 'deploy', content: 'deployed' };
    await A.put(row(id, { nodeId: 'turn:1', turn: 1, state: { messages: [user, a1, tool], turn: 1 } }));
    const { pending: p2 } = await A.recordInterrupt(pauseAt(id, 1, [user, a1, tool]), {
      reason: 'drop the production database?',
      context: null,
    });
    const outbox = (await B.outboxStats()).pendingCount;
    const res = await B.importRows(await bundleOf(A, id));
    expect(res).toMatchObject({
      inserted: 3,
      skipped: 2,
      diverged: [],
      pendingImported: true,
      stalePendingRemoved: [{ executionId: id, checkpointId: p1.checkpointId }],
    });
    expect(await B.getPendingInterrupt(id)).toEqual(p2);
    // nothing queued for the plane: no false interrupt_claimed for P1
    expect((await B.outboxStats()).pendingCount).toBe(outbox);
    // a resumer on B that read P1 cannot claim P2 with it (item 1)
    expect(await B.claimInterrupt(p1)).toBeNull();
    expect(await B.getPendingInterrupt(id)).toEqual(p2);
  });

  it('a second restore kept a stale local pause defect: a pause answered elsewhere and finished is removed, and none is open', async () => {
    const id = `stale-done-${++n}`;
    const A = (await make()).store;
    const B = (await make()).store;
    const { pending: p1 } = await A.recordInterrupt(pauseAt(id, 0, [user, a1]), {
      reason: 'deploy to prod?',
      context: null,
    });
    await B.importRows(await bundleOf(A, id));
    await A.claimInterrupt(p1, { next: answer(id, true, [user, a1]) });
    await A.put(row(id, { nodeId: 'run_end', step: 'run_end', state: { messages: [user, a1], turn: 1 } }));
    const res = await B.importRows(await bundleOf(A, id));
    expect(res).toMatchObject({
      inserted: 2,
      pendingImported: false,
      stalePendingRemoved: [{ executionId: id, checkpointId: p1.checkpointId }],
    });
    expect(await B.getPendingInterrupt(id)).toBeNull();
    expect((await B.listExecutions()).find((e) => e.executionId === id)?.state).toBe('completed');
  });
}

describe('restore divergence: sqlite', () => {
  runDivergenceSuite({
    name: 'sqlite',
    async make() {
      const path = tmp.file(`r${++n}.db`);
      return { store: new SqliteCheckpointer({ path }), reopen: async () => new SqliteCheckpointer({ path }) };
    },
  });
});

describe.skipIf(!pg)('restore divergence: postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_restore_div');
  });
  afterAll(async () => db?.drop());
  runDivergenceSuite({
    name: 'postgres',
    async make() {
      const schema = `r${++n}`;
      const open = async () => {
        const s = new PostgresCheckpointer({ url: db.url, schema, max: 2 });
        await s.setup();
        return s;
      };
      return { store: await open(), reopen: open };
    },
  });
});

describe('waymark restore on a diverged store', () => {
  let plane: TestPlane;
  let key = '';
  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    key = await plane.key('div', ['ingest', 'read']);
  });
  afterAll(async () => plane?.close());

  const cli = async (args: string[]) => {
    const lines: string[] = [];
    const code = await main(args, (l) => lines.push(l));
    return { code, text: lines.join('\n') };
  };

  it('prints a DIVERGED line naming the execution and the seq, and keeps the local rows', async () => {
    const id = 'cli-diverged';
    const dbA = tmp.file('cli-a.db');
    const dbB = tmp.file('cli-b.db');
    const A = new SqliteCheckpointer({ path: dbA });
    await A.put(row(id, { state: { messages: [user], turn: 0 } }));
    const { pending: p1 } = await A.recordInterrupt(pauseAt(id, 0, [user, a1]), {
      reason: 'deploy to prod?',
      context: null,
    });
    await A.close();
    expect((await cli(['sync', 'now', '--db', dbA, '--plane', plane.url, '--key', key])).code).toBe(0);
    const r1 = await cli(['restore', id, '--db', dbB, '--plane', plane.url, '--key', key]);
    expect(r1.text).toMatch(/pause restored/);
    expect(r1.text).not.toMatch(/DIVERGED/);
    // both claim P1 while offline
    const A2 = new SqliteCheckpointer({ path: dbA });
    await A2.claimInterrupt(p1, { next: answer(id, true, [user, a1]) });
    await A2.put(
      row(id, {
        nodeId: 'turn:1',
        turn: 1,
        state: {
          messages: [user, a1, { role: 'tool', toolCallId: 'c0', name: 'deploy', content: 'deployed' }],
          turn: 1,
        },
      }),
    );
    await A2.close();
    const B = new SqliteCheckpointer({ path: dbB });
    const r3b = (await B.claimInterrupt(p1, { next: answer(id, false, [user, a1]) }))!.checkpoint!;
    await B.close();
    expect((await cli(['sync', 'now', '--db', dbA, '--plane', plane.url, '--key', key])).code).toBe(0);
    const r2 = await cli(['restore', id, '--db', dbB, '--plane', plane.url, '--key', key]);
    expect(r2.code, r2.text).toBe(0);
    expect(r2.text).toMatch(
      new RegExp(
        `^DIVERGED ${id} at seq 2 \\(a different row is stored here at that seq\\): this store kept its own rows; 2 rows from the plane were not written`,
        'm',
      ),
    );
    const B2 = new SqliteCheckpointer({ path: dbB });
    try {
      expect((await B2.latest(id))?.id).toBe(r3b.id);
    } finally {
      await B2.close();
    }
  });

  it('prints a STALE PAUSE line when a second restore replaces a pause answered elsewhere', async () => {
    const id = 'cli-stale-pause';
    const dbA = tmp.file('cli-stale-a.db');
    const dbB = tmp.file('cli-stale-b.db');
    const A = new SqliteCheckpointer({ path: dbA });
    const { pending: p1 } = await A.recordInterrupt(pauseAt(id, 0, [user, a1]), {
      reason: 'deploy to prod?',
      context: null,
    });
    await A.close();
    expect((await cli(['sync', 'now', '--db', dbA, '--plane', plane.url, '--key', key])).code).toBe(0);
    expect((await cli(['restore', id, '--db', dbB, '--plane', plane.url, '--key', key])).text).toMatch(
      /pause restored/,
    );
    const A2 = new SqliteCheckpointer({ path: dbA });
    await A2.claimInterrupt(p1, { next: answer(id, true, [user, a1]) });
    const { pending: p2 } = await A2.recordInterrupt(pauseAt(id, 1, [user, a1]), {
      reason: 'drop the production database?',
      context: null,
    });
    await A2.close();
    expect((await cli(['sync', 'now', '--db', dbA, '--plane', plane.url, '--key', key])).code).toBe(0);
    const r = await cli(['restore', id, '--db', dbB, '--plane', plane.url, '--key', key]);
    expect(r.code, r.text).toBe(0);
    expect(r.text).toMatch(/restored cli-stale-pause: 2 rows written, 1 already here; pause restored/);
    expect(r.text).toMatch(
      new RegExp(
        `^STALE PAUSE removed: ${id} paused at checkpoint ${p1.checkpointId}, which is no longer its newest row$`,
        'm',
      ),
    );
    expect(r.text).not.toMatch(/DIVERGED/);
    const B = new SqliteCheckpointer({ path: dbB });
    try {
      expect(await B.getPendingInterrupt(id)).toEqual(p2);
    } finally {
      await B.close();
    }
  });
});
