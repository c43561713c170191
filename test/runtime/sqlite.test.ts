import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';
import { runRuntimeSuite } from './suite.js';

const tmp = scratchDir('waymark-rt-sqlite-');
let n = 0;
runRuntimeSuite({
  name: 'sqlite',
  async make(options) {
    const store = new SqliteCheckpointer({ path: tmp.file(`rt${++n}.db`), faults: options?.faults });
    return { store, close: () => store.close() };
  },
});
