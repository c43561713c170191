import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';
import { runLeaseProcessSuite } from './lease-suite.js';

const tmp = scratchDir('waymark-lease-sqlite-');
let n = 0;
runLeaseProcessSuite({
  name: 'sqlite',
  async make() {
    const path = tmp.file(`l${++n}.db`);
    const store = new SqliteCheckpointer({ path });
    return { spec: `sqlite:${path}`, store, close: () => store.close() };
  },
});
