/**
 * `waymark ui` in a process of its own over a SQLite store whose idempotency read (the run page reads it after its
 * summary) holds the thread for `busyMs` without yielding, as a synchronous store's slow read does
 * (test/ui/run-page-streamed.test.ts). Sends `{ url }` when listening; closes on the message `close`.
 *
 *   run-page-busy-ui.ts <db file> <busyMs>
 */
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi } from '../../client/ui/serve.js';
import type { IdempotencyEntry } from '../../shared/rows.js';

const [file, busy] = process.argv.slice(2);
const busyMs = Number(busy);

class BusyStore extends SqliteCheckpointer {
  override async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    const until = Date.now() + busyMs;
    while (Date.now() < until) {
      // the thread held, as a synchronous read holds it
    }
    return super.listIdempotent(executionId);
  }
}

const store = new BusyStore({ path: file, writerId: 'busy-reader' });
const ui = await serveLocalUi(store, { port: 0 });
process.on('message', async (m) => {
  if (m !== 'close') return;
  await ui.close();
  await store.close();
  process.exit(0);
});
process.send!({ url: ui.url });
