/**
 * The refund agent used by the examples, the proofs and the tests: a model
 * that asks for a refund (and optionally a notification), a refund tool that
 * pauses for a manager above a threshold, and a ledger file the runs cannot
 * roll back, so charges are counted across processes.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  Agent,
  idempotent,
  interrupt,
  ScriptedModel,
  tool,
  type Checkpointer,
  type FaultHook,
  type ScriptReply,
} from '../../client/index.js';

export interface LedgerEntry {
  kind: 'charge' | 'notify';
  order?: string;
  amount?: number;
  pid: number;
}

/** An append-only JSON-lines file. */
export class Ledger {
  constructor(readonly path: string) {}
  append(e: Omit<LedgerEntry, 'pid'>): void {
    appendFileSync(this.path, JSON.stringify({ ...e, pid: process.pid }) + '\n');
  }
  entries(): LedgerEntry[] {
    if (!existsSync(this.path)) return [];
    return readFileSync(this.path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LedgerEntry);
  }
  charges(): LedgerEntry[] {
    return this.entries().filter((e) => e.kind === 'charge');
  }
}

export interface RefundAgentOptions {
  store: Checkpointer;
  ledger: Ledger;
  /** Wrap the charge in idempotent() (default true). */
  idempotentCharge?: boolean;
  /** Ask for a notify tool call in the same turn as the refund. */
  withNotify?: boolean;
  /** Refunds above this pause for approval. */
  threshold?: number;
  /** Ask for approval twice (two interrupts in one tool invocation). */
  twoApprovals?: boolean;
  /** Charge first, then ask for approval (a side effect that precedes the pause). */
  chargeBeforeApproval?: boolean;
  /** Leave the refund tool out (to show a missing tool is named). */
  withoutRefundTool?: boolean;
  faults?: FaultHook;
  model?: ScriptedModel;
  /** The run's lease (ms); processes that are killed on purpose use a short one so a resumer need not wait 30 s. */
  leaseMs?: number;
}

/** The lease of the child processes the proofs and crash tests kill: a resumer waits this long at most. */
export const CHILD_LEASE_MS = 1_000;

/**
 * Wait until no live runner holds the run (its lease released or expired, by
 * the store's clock): after a runner was killed, `resume` is refused with
 * RunInProgress until then.
 */
export async function untilLeaseFree(store: Checkpointer, executionId: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await store.getLease(executionId))?.live) {
    if (Date.now() > deadline) throw new Error(`the lease of ${executionId} was still held after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The user message for a refund: "Refund order 1042 amount 50000". */
export const refundRequest = (order: string, amount: number) => `Refund order ${order} amount ${amount}`;

export function refundModel(options: { withNotify?: boolean } = {}): ScriptedModel {
  return new ScriptedModel(({ turn, lastUser, toolResults }) => {
    const m = /order (\S+) amount (\d+)/.exec(lastUser);
    const order = m?.[1] ?? '0';
    const amount = Number(m?.[2] ?? 0);
    if (turn === 0) {
      const toolCalls: ScriptReply['toolCalls'] = [{ name: 'refund', arguments: { order, amount } }];
      if (options.withNotify) toolCalls.push({ name: 'notify', arguments: { message: `refunding ${order}` } });
      return { toolCalls };
    }
    // the answer follows the tool's result: a declined refund is not on its way
    const declined = toolResults.some((r) => r.name === 'refund' && r.content.includes('"approved":false'));
    return {
      content: declined ? `Refund for order ${order} was declined.` : `Refund for order ${order} is on its way.`,
    };
  });
}

export function refundAgent(o: RefundAgentOptions): { agent: Agent; model: ScriptedModel } {
  const threshold = o.threshold ?? 1000;
  const chargeCard = (order: string, amount: number) => {
    o.ledger.append({ kind: 'charge', order, amount });
    return { charged: amount, order };
  };
  const charge =
    o.idempotentCharge === false
      ? async (order: string, amount: number) => chargeCard(order, amount)
      : idempotent(async function charge(order: string, amount: number) {
          return chargeCard(order, amount);
        });
  const refund = tool({
    name: 'refund',
    description: 'Refund an order',
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: async ({ order, amount }) => {
      if (o.chargeBeforeApproval) {
        const receipt = await charge(order, amount);
        const decision = amount > threshold ? interrupt('manager_approval', { order, amount, balance: 100 }) : null;
        return { approved: decision?.approved ?? true, receipt };
      }
      if (amount > threshold) {
        const decision = interrupt('manager_approval', { order, amount, balance: 100 });
        if (!decision.approved) return { approved: false };
        if (o.twoApprovals) {
          const second = interrupt('finance_approval', {
            order,
            amount,
            firstApprover: decision.metadata.approver ?? null,
          });
          if (!second.approved) return { approved: false, stage: 'finance' };
        }
      }
      const receipt = await charge(order, amount);
      return { approved: true, receipt };
    },
  });
  const notify = tool({
    name: 'notify',
    description: 'Notify the customer',
    parameters: z.object({ message: z.string() }),
    execute: ({ message }) => {
      o.ledger.append({ kind: 'notify', order: message });
      return 'sent';
    },
  });
  const model = o.model ?? refundModel({ withNotify: o.withNotify });
  const tools = [...(o.withoutRefundTool ? [] : [refund]), notify];
  return {
    agent: new Agent({ name: 'refund-bot', model, tools, checkpointer: o.store, faults: o.faults, leaseMs: o.leaseMs }),
    model,
  };
}
