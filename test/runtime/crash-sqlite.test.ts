import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';
import { runCrashSuite } from './crash-suite.js';

const tmp = scratchDir('waymark-crash-sqlite-');
let n = 0;
runCrashSuite({
  name: 'sqlite',
  async make() {
    const path = tmp.file(`c${++n}.db`);
    const store = new SqliteCheckpointer({ path });
    return { spec: `sqlite:${path}`, store, close: () => store.close() };
  },
});
