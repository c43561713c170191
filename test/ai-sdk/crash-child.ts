/** argv: dbPath url ledger executionId faultPoint hits. Runs the shop agent, killed at the fault point. */
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { crashAgent } from './crash-agent.js';

const [path, url, ledger, executionId, point, hits] = process.argv.slice(2);
const faults = killAt(faultPoint(point), { hits: Number(hits) });
const store = new SqliteCheckpointer({ path });
const agent = crashAgent({ url, store, ledger, faults, leaseMs: 1_000 });
const result = await agent.run('Charge order A-7', {
  executionId,
  onEvent: (e) => process.stdout.write(JSON.stringify(e) + '\n'),
});
process.stdout.write(JSON.stringify({ result }) + '\n');
await store.close();
