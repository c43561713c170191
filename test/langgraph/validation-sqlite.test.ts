/**
 * LangGraph's own conformance suite for checkpoint savers, run against
 * `WaymarkSaver` on a real SQLite file per checkpointer. Nothing is skipped.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { scratchDir } from '../helpers/tmp.js';

// the suite calls vitest's functions as globals
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });

const tmp = scratchDir('waymark-lg-validate-');
let n = 0;
const initializer = {
  checkpointerName: 'waymark (sqlite)',
  async createCheckpointer() {
    const saver = new WaymarkSaver(new SqliteCheckpointer({ path: tmp.file(`s${++n}.db`), synchronous: 'NORMAL' }));
    await saver.setup();
    return saver;
  },
  async destroyCheckpointer(saver: WaymarkSaver) {
    await saver.store.close();
  },
  afterAll() {
    tmp.cleanup();
  },
};

validate(initializer);
// opt-in in the package (not run by `validate`): the walk that rebuilds delta channels from stored writes
describe('waymark (sqlite) delta channel history', () => deltaChannelHistoryTests(initializer));
