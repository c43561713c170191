/**
 * Crashes are real here: a child process is SIGKILLed at a named fault point,
 * then this process resumes the run from the rows alone.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import type { Checkpointer } from '../../client/index.js';
import { Ledger, refundAgent, untilLeaseFree } from '../../examples/agents/refund.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = fileURLToPath(new URL('../../examples/agents/refund-child.ts', import.meta.url));

export interface CrashSuiteOptions {
  name: string;
  /** A store spec the child can open, and a store on it for this process. */
  make(): Promise<{ spec: string; store: Checkpointer; close(): Promise<void> }>;
}

export function runCrashSuite(options: CrashSuiteOptions): void {
  describe(`crash and re-entry with real processes: ${options.name}`, () => {
    const tmp = scratchDir('waymark-crash-');
    let spec: string;
    let store: Checkpointer;
    let close: () => Promise<void>;
    let ledger: Ledger;
    let n = 0;
    beforeEach(async () => {
      ({ spec, store, close } = await options.make());
      ledger = new Ledger(tmp.file(`ledger-${++n}.jsonl`));
    });
    afterEach(async () => close());
    afterAll(() => tmp.cleanup());

    const child = (id: string, action: string, amount: number, point?: string, hits?: number) =>
      runTs(CHILD, [spec, ledger.path, id, action, String(amount), ...(point ? [point, String(hits ?? 1)] : [])]);
    const rows = async (id: string) => (await store.list(id)).map((r) => `${r.nodeId} ${r.step} ${r.status}`);

    it('pause in one process, resume in another; a second resume is refused', async () => {
      const id = `pause-${n}`;
      const a = await child(id, 'run', 50000);
      expect(a.code, a.stderr).toBe(0);
      expect(JSON.parse(a.stdout).result).toMatchObject({
        status: 'paused',
        pendingInterrupt: { context: { order: '1042', amount: 50000, balance: 100 } },
      });
      const { agent } = refundAgent({ store, ledger });
      const r = await agent.resume(id, { approved: true, metadata: { approver: 'alice' } });
      expect(r.status).toBe('completed');
      expect(ledger.charges().map((c) => c.pid)).toEqual([process.pid]);
      await expect(agent.resume(id, { approved: true })).rejects.toMatchObject({ code: 'ALREADY_RESUMED' });
    });

    it('killed inside the tool: resume re-runs the tool with its saved arguments and does not call the model for that turn', async () => {
      const id = `tool-${n}`;
      const a = await child(id, 'run', 20, 'runtime.beforeTool');
      expect(a.signal).toBe('SIGKILL');
      expect(await rows(id)).toEqual(['turn:0 llm_call completed', 'turn:0/tool:refund tool_call completed']);
      await untilLeaseFree(store, id);
      const { agent, model } = refundAgent({ store, ledger });
      const r = await agent.resume(id);
      expect(r.status).toBe('completed');
      expect(model.calls).toBe(1);
      expect(ledger.charges()).toEqual([expect.objectContaining({ order: '1042', amount: 20, pid: process.pid })]);
      expect((await rows(id)).slice(2)).toEqual(['turn:1 llm_call completed', 'run_end run_end completed']);
    });

    it('killed waiting on the model: resume re-issues the model and does not re-run the tool', async () => {
      const id = `model-${n}`;
      const a = await child(id, 'run', 20, 'runtime.beforeModel', 2);
      expect(a.signal).toBe('SIGKILL');
      expect(await rows(id)).toEqual([
        'turn:0 llm_call completed',
        'turn:0/tool:refund tool_call completed',
        'turn:1 llm_call completed',
      ]);
      expect(ledger.charges().length).toBe(1);
      await untilLeaseFree(store, id);
      const { agent, model } = refundAgent({ store, ledger });
      const r = await agent.resume(id);
      expect(r.status).toBe('completed');
      expect(model.calls).toBe(1);
      expect(ledger.charges().length).toBe(1);
    });

    it('a tool re-run after a crash may pause; that pause is recorded and resumable', async () => {
      const id = `ctp-${n}`;
      const a = await child(id, 'run', 50000, 'runtime.beforeTool');
      expect(a.signal).toBe('SIGKILL');
      await untilLeaseFree(store, id);
      const { agent } = refundAgent({ store, ledger });
      const p = await agent.resume(id);
      expect(p).toMatchObject({
        status: 'paused',
        pendingInterrupt: { nodeId: 'turn:0/tool:refund', reason: 'manager_approval' },
      });
      expect(await store.getPendingInterrupt(id)).not.toBeNull();
      const r = await agent.resume(id, { approved: true });
      expect(r.status).toBe('completed');
      expect(ledger.charges().length).toBe(1);
    });

    it('killed right after claiming a pause: the answer was committed with the claim, so the run still finishes once', async () => {
      const id = `claim-${n}`;
      expect((await child(id, 'run', 50000)).code).toBe(0);
      const b = await child(id, 'resume-approve', 0, 'store.claim.afterCommit');
      expect(b.signal).toBe('SIGKILL');
      expect(await store.getPendingInterrupt(id)).toBeNull();
      await untilLeaseFree(store, id);
      const { agent } = refundAgent({ store, ledger });
      const r = await agent.resume(id);
      expect(r.status).toBe('completed');
      expect(ledger.charges().length).toBe(1);
    });

    it('killed right after the idempotent charge committed: the resumed tool does not charge again', async () => {
      const id = `charge-${n}`;
      const a = await child(id, 'run', 20, 'store.idempotency.afterCommit');
      expect(a.signal).toBe('SIGKILL');
      expect(ledger.charges().length).toBe(1);
      await untilLeaseFree(store, id);
      const r = await refundAgent({ store, ledger }).agent.resume(id);
      expect(r.status).toBe('completed');
      expect(ledger.charges().length).toBe(1);
    });
  });
}
