/**
 * What every part of the store contract's conformance suite shares: the
 * harness a backend hands in, row builders, an error-code assertion, a test
 * function that honours `skip`, and the per-test store setups (one handle, or
 * two standing for two processes).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Checkpointer, CheckpointInput } from '../../checkpointer.js';
import type { FaultHook } from '../../faults.js';
import { hasCode, type ErrorCode } from '../../../shared/errors.js';

/** One store under test, as a backend's `make` hands it to the conformance suite. */
export interface StoreHarness {
  /** The store, set up and ready. */
  store: Checkpointer;
  /** Overwrite one column of a stored checkpoint with raw text (simulated corruption). */
  corrupt(rowId: string, column: 'state' | 'node_input' | 'node_output', text: string): Promise<void>;
  /** A second, independent handle on the same stored data (another process would open the same). */
  reopen(): Promise<Checkpointer>;
  /** Close the store and any handle `reopen` made; the suite calls it after each test. */
  close(): Promise<void>;
}

/** Options of `runStoreSuite`: the backend's name, how to make a store, and the tests it skips. */
export interface StoreSuiteOptions {
  /** The backend's name, in the suite's title. */
  name: string;
  /** Make a fresh, empty store for one test (with `faults` as its fault hook, when the test gives one). */
  make(options: { faults?: FaultHook }): Promise<StoreHarness>;
  /** Tests of the suite this backend skips, each by its name and with the reason shown; default none. */
  skip?: { test: string; reason: string }[];
}

let n = 0;
/** A fresh execution id, unique across every part of the suite. */
export const exec = () => `exec-${Date.now().toString(36)}-${++n}`;

export function input(executionId: string, over: Partial<CheckpointInput> = {}): CheckpointInput {
  return {
    executionId,
    nodeId: 'turn:0',
    turn: 0,
    step: 'llm_call',
    status: 'completed',
    agentPath: 'agent:test',
    state: { messages: [{ role: 'user', content: 'hi' }], turn: 0 },
    ...over,
  };
}

export const marker = (executionId: string, status: 'completed' | 'failed', createdAt?: string) =>
  input(executionId, { nodeId: 'run_end', step: 'run_end', status, createdAt });

export const pauseRow = (executionId: string) =>
  input(executionId, {
    nodeId: 'turn:0/tool:refund',
    step: 'hitl_pause',
    status: 'interrupted',
    agentPath: 'agent:test/tool:refund',
  });

export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err, `expected an error with code ${code}`).toBeDefined();
  expect(
    hasCode(err, code),
    `expected code ${code}, got ${(err as { code?: string }).code}: ${(err as Error).message}`,
  ).toBe(true);
}

/** `it`, except for the tests `options.skip` names: those are skipped, each showing its reason. */
export function contractTest(options: StoreSuiteOptions): (name: string, fn: () => Promise<void>) => void {
  const skipped = new Map((options.skip ?? []).map((s) => [s.test, s.reason]));
  return (name, fn) => {
    const reason = skipped.get(name);
    if (reason) it.skip(`${name} — skipped: ${reason}`, fn);
    else it(name, fn);
  };
}

/**
 * Two handles on one store for each test of the enclosing describe, standing
 * for two processes: `a` from the harness, set up; `b` reopened on its data.
 * `use` receives them before each test; both are closed after it.
 */
export function withTwoHandles(
  options: StoreSuiteOptions,
  use: (handles: { a: Checkpointer; b: Checkpointer }) => void,
): void {
  let h: StoreHarness;
  let b: Checkpointer;
  beforeEach(async () => {
    h = await options.make({});
    await h.store.setup();
    b = await h.reopen();
    use({ a: h.store, b });
  });
  afterEach(async () => {
    await b.close();
    await h.close();
  });
}

/**
 * One store for each test of the enclosing describe: made with `faults` (a
 * hook that never fires by default), set up, handed to `use` before each
 * test, closed after it.
 */
export function withStore(
  options: StoreSuiteOptions,
  use: (s: { h: StoreHarness; store: Checkpointer }) => void,
  faults: FaultHook = () => {},
): void {
  let h: StoreHarness;
  beforeEach(async () => {
    h = await options.make({ faults });
    await h.store.setup();
    use({ h, store: h.store });
  });
  afterEach(async () => {
    await h.close();
  });
}
