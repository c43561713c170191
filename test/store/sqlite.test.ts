import { afterAll } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';
import { runStoreSuite } from '../../client/testing/index.js';

const tmp = scratchDir('waymark-sqlite-suite-');
afterAll(() => tmp.cleanup());
let n = 0;

runStoreSuite({
  name: 'sqlite',
  async make({ faults }) {
    const path = tmp.file(`s${++n}.db`);
    const store = new SqliteCheckpointer({ path, faults });
    return {
      store,
      async corrupt(rowId, column, text) {
        store.connection.prepare(`UPDATE checkpoints SET ${column} = ? WHERE id = ?`).run(text, rowId);
      },
      reopen: async () => new SqliteCheckpointer({ path }),
      close: () => store.close(),
    };
  },
});
