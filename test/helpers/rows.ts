/** Build valid wire events for plane tests, through a real store so rows are exactly what a client sends. */
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { OutboxEvent } from '../../shared/rows.js';

export async function eventsOf(
  build: (store: SqliteCheckpointer) => Promise<void>,
  writerId = 'test-writer',
): Promise<OutboxEvent[]> {
  const store = new SqliteCheckpointer({ path: ':memory:', writerId });
  try {
    await build(store);
    return await takeEvents(store);
  } finally {
    await store.close();
  }
}

/** Every event the store has not sent yet, in outbox order, marked sent (what a drain would carry). */
export async function takeEvents(store: SqliteCheckpointer): Promise<OutboxEvent[]> {
  const out: OutboxEvent[] = [];
  for (;;) {
    const page = await store.fetchUnsynced({ limit: 1000, maxBytes: 1e9 });
    if (!page.length) break;
    out.push(...page.map((e) => e.event!));
    await store.markSynced(page.map((e) => e.id));
  }
  return out;
}

export const step = (executionId: string, i: number, extra: Record<string, unknown> = {}) => ({
  executionId,
  nodeId: `turn:${i}`,
  turn: i,
  step: 'llm_call' as const,
  status: 'completed' as const,
  agentPath: 'agent:t',
  state: { messages: [{ role: 'user', content: `m${i}` }], turn: i },
  ...extra,
});

export const pause = (executionId: string, turn = 0) => ({
  executionId,
  nodeId: `turn:${turn}/tool:refund`,
  turn,
  step: 'hitl_pause' as const,
  status: 'interrupted' as const,
  agentPath: 'agent:t/tool:refund',
  state: { messages: [] },
});
