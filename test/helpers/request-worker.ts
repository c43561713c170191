/**
 * A machine that serves the plane's run requests (test/decisions/requests-*.test.ts): a SQLite store connected to
 * the plane, an agent whose `work` tool notes each run of it in a shared ledger (and, in a fork, may wait), and
 * `serveDecisions` over both.
 */
import { z } from 'zod';
import { Agent, connectPlane, ScriptedModel, serveDecisions, tool, type RequestOutcome } from '../../client/index.js';
import { currentRun } from '../../client/runtime/context.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

export interface RequestWorkerOptions {
  planeUrl: string;
  apiKey: string;
  /** The store's file. */
  path: string;
  writerId?: string;
  /** Each run of `work` pushes `<execution id> <tag>` here; `tag` defaults to the store's writer id. */
  ledger: string[];
  tag?: string;
  /** In a run other than `source`, `work` waits for this before it returns. */
  hold?: Promise<void>;
}

/** The store, its replica and an agent that calls `work` once, then answers. */
export function requestWorker(o: RequestWorkerOptions) {
  const store = new SqliteCheckpointer({ path: o.path, ...(o.writerId ? { writerId: o.writerId } : {}) });
  const replica = connectPlane(store, {
    url: o.planeUrl,
    apiKey: o.apiKey,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    followChanges: false,
  });
  const work = tool({
    name: 'work',
    description: 'A step of work',
    parameters: z.object({}),
    execute: async () => {
      const id = currentRun()?.executionId ?? '?';
      o.ledger.push(`${id} ${o.tag ?? store.writerId}`);
      if (o.hold && id !== 'source') await o.hold;
      return 'ok';
    },
  });
  const agent = new Agent({
    name: 'bot',
    model: new ScriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ name: 'work', arguments: {} }] } : { content: 'done' },
    ),
    tools: [work],
    checkpointer: store,
  });
  return { store, replica, agent };
}

/** The machine's decision worker, until `stop` aborts; each request outcome pushed to `seen`. */
export const serveRequests = (
  m: ReturnType<typeof requestWorker>,
  seen: RequestOutcome[],
  stop: AbortController,
): ReturnType<typeof serveDecisions> =>
  serveDecisions({
    agent: m.agent,
    store: m.store,
    replica: m.replica,
    signal: stop.signal,
    pollMs: 50,
    retry: { baseMs: 50, capMs: 200 },
    onRequestOutcome: (o) => seen.push(o),
  });

export { until } from './until.js';
