/**
 * The drain and ingest benches' backlog: `n` checkpoints of 100-turn runs
 * (run-0, run-1, …, or `prefix`-0, …), each turn a message of 200 bytes of pseudo-random text
 * (fixed by `seed` and the row), put into `store` one after another; the
 * same rows as outbox events; a scratch Postgres database per measurement.
 */
import postgres from 'postgres';
import type { Checkpointer } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { randomText } from './text.js';

export async function putBacklog(store: Checkpointer, n: number, seed: number, prefix = 'run'): Promise<void> {
  let messages: unknown[] = [];
  for (let i = 0; i < n; i++) {
    messages =
      i % 100 === 0
        ? [{ role: 'user', content: randomText(200, seed, i) }]
        : [...messages, { role: 'assistant', content: randomText(200, seed, i) }];
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

/** The outbox events of a backlog of `n` rows (as the drain would send them), made in a store in memory. */
export async function backlogEvents(n: number, seed = 4, prefix = 'run'): Promise<OutboxEvent[]> {
  const store = new SqliteCheckpointer({ path: ':memory:', synchronous: 'NORMAL' });
  await putBacklog(store, n, seed, prefix);
  const out = await takeEvents(store);
  await store.close();
  return out;
}

/** Every event `store` has not sent yet, in outbox order, marked sent (what a drain would carry). */
export async function takeEvents(store: SqliteCheckpointer): Promise<OutboxEvent[]> {
  const out: OutboxEvent[] = [];
  for (;;) {
    const page = await store.fetchUnsynced({ limit: 5000, maxBytes: 1e12 });
    if (!page.length) break;
    out.push(...page.map((e) => e.event!));
    await store.markSynced(page.map((e) => e.id));
  }
  return out;
}

/** A fresh database on the Postgres server at `serverUrl` for one measurement (named after `label`); dropped after. */
export async function withScratchDatabase<T>(
  serverUrl: string,
  label: string,
  fn: (url: string) => Promise<T>,
): Promise<T> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  const name = `waymark_bench_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  await sql.unsafe(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return await fn(url.toString());
  } finally {
    await sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
    await sql.end();
  }
}
