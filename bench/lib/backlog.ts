/**
 * The drain and ingest benches' backlog: `n` checkpoints of 100-turn runs
 * (run-0, run-1, …, or `prefix`-0, …), each turn a message of 200 bytes of pseudo-random text
 * (fixed by `seed` and the row), put into `store` one after another.
 */
import type { Checkpointer } from '../../client/index.js';
import { randomText } from './text.js';

export async function putBacklog(store: Checkpointer, n: number, seed: number, prefix = 'run'): Promise<void> {
  let messages: unknown[] = [];
  for (let i = 0; i < n; i++) {
    messages = i % 100 === 0 ? [{ role: 'user', content: randomText(200, seed, i) }] : [...messages, { role: 'assistant', content: randomText(200, seed, i) }];
    await store.put({
      executionId: `${prefix}-${Math.floor(i / 100)}`,
      nodeId: `turn:${i % 100}`,
      turn: i % 100,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:b',
      state: { messages: messages as never },
    });
  }
}
