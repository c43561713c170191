/**
 * A process whose runs put at once on one SQLite store (synchronous=FULL), so
 * their puts share group commits; SIGKILLed at a named fault point. It prints
 * `ack <executionId> <seq> <id>` only after a put's promise resolved, and
 * `commit <n>` at the group-commit fault point with the number of puts issued
 * but not yet acknowledged (stdout to a pipe is synchronous: every line
 * printed before the kill reaches the parent).
 *
 *   tsx group-commit-child.ts <db> <point> <hits> <writers> <puts>
 */
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import type { FaultHook } from '../../client/index.js';

const [db, point, hits, writers, puts] = process.argv.slice(2);
const kill = killAt(faultPoint(point), { hits: Number(hits) });
let inFlight = 0;
const faults: FaultHook = (p) => {
  if (p === 'store.groupCommit.beforeCommit') process.stdout.write(`commit ${inFlight}\n`);
  kill(p);
};
const store = new SqliteCheckpointer({ path: db, synchronous: 'FULL', faults });

async function writer(w: number): Promise<void> {
  const executionId = `gc-${w}`;
  let prevId: string | null = null;
  for (let i = 0; i < Number(puts); i++) {
    inFlight++;
    const row = await store.put({
      executionId,
      prevId,
      nodeId: `turn:${i}`,
      turn: i,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:gc',
      state: { messages: [{ role: 'assistant', content: `writer ${w} turn ${i}` }], turn: i },
    });
    inFlight--;
    process.stdout.write(`ack ${executionId} ${row.seq} ${row.id}\n`);
    prevId = row.id;
  }
}

await Promise.all(Array.from({ length: Number(writers) }, (_, w) => writer(w)));
await store.close();
process.stdout.write('done\n');
