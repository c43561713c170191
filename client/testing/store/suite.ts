/**
 * The store contract's conformance suite. Every adapter runs exactly these
 * tests; a skip must name its reason. `runStoreSuite` runs the parts in
 * order: the closed-store and setup tests here, then puts and reads
 * (write-suite), the codec (codec-suite), pauses and idempotency
 * (pause-suite), deletion (delete-suite), the outbox and row checks
 * (outbox-suite), leases (lease-suite) and cancel (cancel-suite). What the
 * parts share is in harness.ts.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer, Lease } from '../../checkpointer.js';
import {
  contractTest,
  exec,
  expectCode,
  input,
  pauseRow,
  withStore,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';
import { runWriteSuite } from './write-suite.js';
import { runCodecSuite } from './codec-suite.js';
import { runPauseSuite } from './pause-suite.js';
import { runDeleteSuite } from './delete-suite.js';
import { runOutboxSuite } from './outbox-suite.js';
import { runLeaseSuite } from './lease-suite.js';
import { runCancelSuite } from './cancel-suite.js';
import { decisionFor, runDecisionSuite } from './decisions.js';

export {
  contractTest,
  expectCode,
  input,
  marker,
  pauseRow,
  withTwoHandles,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';

/** The contract's methods that answer with a promise, but `close` (which a closed store may be asked again). */
type RefusedWhenClosed = Exclude<
  {
    [K in keyof Checkpointer]-?: Checkpointer[K] extends ((...args: never[]) => Promise<unknown>) | undefined
      ? undefined extends Checkpointer[K]
        ? never
        : K
      : never;
  }[keyof Checkpointer],
  'close'
>;

export function runStoreSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    withStore(options, (s) => ({ h, store } = s));

    test('a closed store refuses every method with STORE_CLOSED (a rejected promise, nothing written); close() may be called again', async () => {
      const id = exec();
      const row = await store.put(input(id));
      const other = await h.reopen();
      const lease: Lease = {
        executionId: id,
        holder: 'A',
        ttlMs: 60_000,
        epoch: 1,
        expiresAt: new Date().toISOString(),
      };
      await store.close();
      // a Record over the contract's method names: a method added to the contract must be added here
      const calls: Record<RefusedWhenClosed, (s: Checkpointer) => Promise<unknown>> = {
        setup: (s) => s.setup(),
        put: (s) => s.put(input(id, { prevId: row.id })),
        recordInterrupt: (s) => s.recordInterrupt(pauseRow(id), { reason: 'r', context: null }),
        claimInterrupt: (s) => s.claimInterrupt({ executionId: id, checkpointId: row.id }),
        recordDecision: (s) => s.recordDecision(decisionFor(id, row.id)),
        listDecisions: (s) => s.listDecisions(),
        getDecision: (s) => s.getDecision(id, row.id),
        forgetUnheldDecisions: (s) => s.forgetUnheldDecisions(id, null, 0),
        decisionSeq: (s) => s.decisionSeq(),
        acquireLease: (s) => s.acquireLease(id, { holder: 'A', ttlMs: 60_000 }),
        renewLease: (s) => s.renewLease(lease),
        releaseLease: (s) => s.releaseLease(lease),
        getLease: (s) => s.getLease(id),
        cancel: (s) => s.cancel(id),
        getPendingInterrupt: (s) => s.getPendingInterrupt(id),
        listPendingInterrupts: (s) => s.listPendingInterrupts(),
        latest: (s) => s.latest(id),
        getById: (s) => s.getById(row.id),
        list: (s) => s.list(id),
        usageTotals: (s) => s.usageTotals([id]),
        // the row's state is cached: a closed store refuses before it looks
        readState: (s) => s.readState(row),
        listExecutions: (s) => s.listExecutions(),
        getIdempotent: (s) => s.getIdempotent(id, 'k'),
        putIdempotent: (s) => s.putIdempotent(id, 'k', 1),
        listIdempotent: (s) => s.listIdempotent(id),
        deleteExecution: (s) => s.deleteExecution(id),
        prune: (s) => s.prune({ olderThan: new Date(Date.now() + 60_000), includeUnsynced: true }),
        fetchUnsynced: (s) => s.fetchUnsynced({ limit: 10, maxBytes: 1_000_000 }),
        applyResults: (s) => s.applyResults({ synced: [row.id] }),
        markSynced: (s) => s.markSynced([]),
        markQuarantined: (s) => s.markQuarantined({}),
        outboxStats: (s) => s.outboxStats(),
        listQuarantined: (s) => s.listQuarantined(),
        importRows: (s) => s.importRows({ checkpoints: [], pending: null, idempotency: [] }),
        heldByPlane: (s) => s.heldByPlane('e'),
        noteSending: (s) => s.noteSending(['e']),
        getMeta: (s) => s.getMeta('k'),
        setMeta: (s) => s.setMeta('k', 'v'),
      };
      try {
        for (const [name, call] of Object.entries(calls)) {
          let answer: Promise<unknown> | undefined;
          expect(() => (answer = call(store)), `${name} throws instead of rejecting`).not.toThrow();
          await expectCode(answer!, 'STORE_CLOSED').catch((e: Error) => {
            throw new Error(`${name}: ${e.message}`);
          });
        }
        await store.close();
        // nothing was written: the other handle sees the one row, unsynced, and no note
        expect((await other.list(id)).map((r) => r.id)).toEqual([row.id]);
        expect((await other.fetchUnsynced({ limit: 10, maxBytes: 1_000_000 })).map((e) => e.id)).toEqual([row.id]);
        expect(await other.getMeta('k')).toBeNull();
        expect(await other.getIdempotent(id, 'k')).toEqual({ hit: false });
      } finally {
        await other.close();
      }
    });

    test('setup is idempotent', async () => {
      await store.setup();
      await store.setup();
      expect(store.writerId).toMatch(/\S/);
    });
  });
  runWriteSuite(options);
  runCodecSuite(options);
  runPauseSuite(options);
  runDeleteSuite(options);
  runOutboxSuite(options);
  runLeaseSuite(options);
  runCancelSuite(options);
  runDecisionSuite(options);
}
