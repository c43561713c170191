/**
 * LangGraph's own conformance suite for checkpoint savers, run against
 * `WaymarkSaver` on real Postgres: a database per test file, a schema per
 * checkpointer (the suite expects each checkpointer to start empty). Nothing
 * is skipped.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

// the suite calls vitest's functions as globals
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });

const ready = await pgReady('langgraph validation: postgres');

describe.skipIf(!ready)('postgres', () => {
  let db: TestDatabase;
  let n = 0;
  const initializer = {
    checkpointerName: 'waymark (postgres)',
    async beforeAll() {
      db = await createTestDatabase('waymark_lg');
    },
    beforeAllTimeout: 60_000,
    async createCheckpointer() {
      const saver = new WaymarkSaver(new PostgresCheckpointer({ url: db.url, schema: `lg${++n}`, max: 2 }));
      await saver.setup();
      return saver;
    },
    async destroyCheckpointer(saver: WaymarkSaver) {
      await saver.store.close();
    },
    async afterAll() {
      await db?.drop();
    },
  };
  validate(initializer);
  // opt-in in the package (not run by `validate`): the walk that rebuilds delta channels from stored writes
  describe('waymark (postgres) delta channel history', () => deltaChannelHistoryTests(initializer));
});
