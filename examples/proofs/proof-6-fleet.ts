/** Boundary 6: a laptop and a fleet, and the plane. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { connectPlane, restoreFromPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createKey, openPlaneDatabase, startPlane } from '../../plane/index.js';
import { loadConfig } from '../../plane/config.js';
import { refundAgent, refundRequest } from '../agents/refund.js';
import { backend, Proof, proofEnv } from './lib.js';

const proof = new Proof('Proof 6 · a laptop, a fleet and the plane');
const env = await proofEnv('fleet');
const dir = mkdtempSync(join(tmpdir(), 'waymark-proof-fleet-'));
const database = await openPlaneDatabase({ dataDir: 'memory://' });
const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: dir }), {
  database,
  logger: pino({ level: 'silent' }),
});
const { key } = await createKey(database.db, { createProject: true, project: 'fleet', scopes: ['ingest', 'read'] });
const get = async (path: string) =>
  (await fetch(`${plane.url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
try {
  proof.section(`${backend}: pause, race, claim`);
  const ledger = env.ledger('race');
  await env.child({ executionId: 'race-1', action: 'run', amount: 50000, ledger });
  const outcomes = await Promise.all(
    Array.from({ length: 5 }, () => env.child({ executionId: 'race-1', action: 'resume-approve', ledger })),
  );
  const labels = outcomes.map((o) => o.out?.result?.status ?? o.out?.error?.code).sort();
  proof.say(`outcomes: ${JSON.stringify(labels)}`);
  proof.say(
    `claim: ${backend === 'sqlite' ? 'DELETE … RETURNING inside BEGIN IMMEDIATE (one writer across processes)' : 'DELETE … RETURNING at READ COMMITTED (one winner across connections)'}`,
  );
  proof.check(
    labels.filter((l) => l === 'completed').length === 1 && ledger.charges().length === 1,
    'five resumer processes, one winner, one charge',
  );

  proof.section(`${backend}: the outbox, disconnected`);
  const waiting = await env.store.outboxStats();
  proof.say(
    `events waiting for a plane: ${waiting.pendingCount} (${waiting.pendingBytes} bytes); none sent — no plane connected`,
  );
  proof.check(waiting.pendingCount > 0, 'rows wait locally with no age or count bound');
  const planeBefore = await get('/v1/executions');
  proof.check(planeBefore.items.length === 0, 'nothing reached the plane');

  proof.section(`${backend}: connected, the rows drain`);
  const replicaA = connectPlane(env.store, { url: plane.url, apiKey: key, pollMs: 0 });
  const s = await replicaA.flush({ timeoutMs: 20_000 });
  proof.say(
    `drain: state=${s.state} synced=${s.rowsSynced} waiting=${s.pendingRows} quarantined=${s.quarantinedCount}`,
  );
  proof.check(s.pendingRows === 0 && s.rowsSynced === waiting.pendingCount, 'every waiting event was acked');
  const race = await get('/v1/executions/race-1');
  proof.check(race.execution?.status === 'completed', 'the plane shows the raced run as completed');

  proof.section('laptop-to-laptop: A pauses, B (which never ran it) restores and resumes');
  const handoff = env.ledger('handoff');
  const a = refundAgent({ store: env.store, ledger: handoff, chargeBeforeApproval: true });
  const paused = await a.agent.run(refundRequest('1042', 50000), { executionId: 'handoff-1' });
  await replicaA.flush({ timeoutMs: 10_000 });
  proof.say(`A (${env.store.writerId}): ${paused.status}, charged before the pause: ${handoff.charges().length}`);
  const storeB = new SqliteCheckpointer({ path: join(dir, 'laptop-b.db') });
  const replicaB = connectPlane(storeB, { url: plane.url, apiKey: key, pollMs: 0 });
  const restored = await restoreFromPlane(storeB, 'handoff-1', { url: plane.url, apiKey: key });
  proof.say(
    `B (${storeB.writerId}) restored ${restored.inserted} rows, pause ${restored.pendingImported ? 'restored' : 'missing'}, ${restored.idempotencyInserted} idempotency entries`,
  );
  const b = refundAgent({ store: storeB, ledger: handoff, chargeBeforeApproval: true });
  const done = await b.agent.resume('handoff-1', { approved: true, metadata: { approver: 'bob' } });
  await replicaB.flush({ timeoutMs: 10_000 });
  proof.say(`B resume → ${done.status}; charges in total: ${handoff.charges().length}`);
  proof.check(
    done.status === 'completed' && handoff.charges().length === 1,
    'the charge made on A before the pause did not run again on B',
  );
  try {
    await a.agent.resume('handoff-1', { approved: true });
    proof.check(false, 'A is refused after B claimed');
  } catch (e) {
    proof.say(`A resume → ${(e as Error).name}: ${(e as Error).message}`);
    proof.check(
      (e as { code?: string }).code === 'ALREADY_RESUMED' && (e as Error).message.includes(storeB.writerId),
      'A is refused, naming the winner B',
    );
  }
  const rows = await get('/v1/executions/handoff-1/rows?limit=1000');
  const local = new Set([
    ...(await env.store.list('handoff-1')).map((r) => r.id),
    ...(await storeB.list('handoff-1')).map((r) => r.id),
  ]);
  proof.say(
    `plane rows for handoff-1: ${rows.items.length} (A ∪ B locally: ${local.size}); writers: ${JSON.stringify([...new Set(rows.items.map((r: { writerId: string }) => r.writerId))])}`,
  );
  proof.check(
    rows.items.length === local.size && rows.items.every((r: { id: string }) => local.has(r.id)),
    'the plane shows the whole run, every row once',
  );
  await replicaA.stop();
  await replicaB.stop();
  await storeB.close();
} finally {
  await plane.close();
  await database.close();
  await env.close();
  rmSync(dir, { recursive: true, force: true });
}
proof.finish();
