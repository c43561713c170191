/**
 * A write into a deleted execution: a run still going while another handle
 * deletes its execution must not write its next row at seq 0 (a full snapshot,
 * no idempotency entries: the run started again under the deleted id). Each
 * write names the row it follows; the run
 * stops with EXECUTION_GONE and writes nothing more (no failed marker either).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-execution-gone-');
afterAll(() => tmp.cleanup());
const pg = await pgReady('execution gone: postgres');

/** An agent whose `cleanup` tool deletes (or prunes) the run's own execution through another handle. */
function agentDeletingItself(store: Checkpointer, other: Checkpointer, how: 'delete' | 'prune') {
  let calls = 0;
  const model = new ScriptedModel(({ turn }) => {
    calls++;
    return turn === 0 ? { toolCalls: [{ name: 'cleanup', arguments: {} }] } : { content: 'done' };
  });
  const cleanup = tool({
    name: 'cleanup',
    description: 'delete this run elsewhere',
    parameters: z.object({}),
    execute: async () => {
      const id = (await other.listExecutions())[0].executionId;
      if (how === 'delete') await other.deleteExecution(id);
      else {
        // a prune that finds the run finished: an earlier failed marker makes it look so
        await other.put({
          executionId: id,
          nodeId: 'run_end',
          turn: 0,
          step: 'run_end',
          status: 'failed',
          agentPath: 'agent:gone',
          state: {},
          createdAt: '2020-01-01T00:00:00.000Z',
        });
        expect(
          (await other.prune({ olderThan: new Date('2021-01-01T00:00:00.000Z'), includeUnsynced: true })).executions,
        ).toBe(1);
      }
      return 'cleaned';
    },
  });
  return { agent: new Agent({ name: 'gone', model, tools: [cleanup], checkpointer: store }), modelCalls: () => calls };
}

interface Backend {
  open(): Promise<{ a: Checkpointer; b: Checkpointer }>;
}

function runGoneSuite(name: string, backend: () => Backend) {
  for (const how of ['delete', 'prune'] as const) {
    it(`${name}: a run whose execution another handle ${how === 'delete' ? 'deletes' : 'prunes'} mid-run stops with EXECUTION_GONE and never starts it again at seq 0`, async () => {
      const { a, b } = await backend().open();
      try {
        const { agent, modelCalls } = agentDeletingItself(a, b, how);
        const id = `gone-${how}-${Date.now().toString(36)}`;
        let err: { code?: string; message?: string } | undefined;
        await agent.run('clean up', { executionId: id }).then(
          (r) => (err = { message: `run returned ${JSON.stringify(r)}` }),
          (e) => (err = e),
        );
        expect(err?.code, err?.message).toBe('EXECUTION_GONE');
        // nothing written after the deletion: no seq-0 restart, no failed marker
        expect(await a.list(id)).toEqual([]);
        expect(await b.list(id)).toEqual([]);
        expect(modelCalls()).toBe(1);
        const events = await a.fetchUnsynced({ limit: 1000, maxBytes: 1e9 });
        expect(events.filter((e) => e.executionId === id && e.kind === 'checkpoint')).toEqual([]);
      } finally {
        await a.close();
        await b.close();
      }
    });
  }
}

describe('a write into a deleted or pruned execution', () => {
  let n = 0;
  runGoneSuite('sqlite', () => ({
    async open() {
      const path = tmp.file(`g${++n}.db`);
      return { a: new SqliteCheckpointer({ path }), b: new SqliteCheckpointer({ path }) };
    },
  }));

  describe.skipIf(!pg)('postgres', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase('waymark_gone');
    });
    afterAll(async () => db?.drop());
    runGoneSuite('postgres', () => ({
      async open() {
        const schema = `g${++n}`;
        const a = new PostgresCheckpointer({ url: db.url, schema, max: 2 });
        const b = new PostgresCheckpointer({ url: db.url, schema, max: 2 });
        await a.setup();
        await b.setup();
        return { a, b };
      },
    }));
  });
});
