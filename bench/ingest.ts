/**
 * Plane ingest over loopback HTTP with 500-row batches, next to the raw
 * multi-row insert of the same rows into the same database, in one run.
 *
 *   npx tsx bench/ingest.ts [rows=20000] [pglite|postgres|both]
 */
import postgres from 'postgres';
import pino from 'pino';
import { createKey, openPlaneDatabase, startPlane } from '../plane/index.js';
import { loadConfig } from '../plane/config.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import type { OutboxEvent } from '../shared/rows.js';
import { rawPglite, rawPostgres } from './lib/raw-insert.js';

const N = Number(process.argv[2] ?? 20000);
const which = process.argv[3] ?? 'both';
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 500;

async function makeEvents(): Promise<OutboxEvent[]> {
  const store = new SqliteCheckpointer({ path: ':memory:', synchronous: 'NORMAL' });
  let messages: unknown[] = [];
  for (let i = 0; i < N; i++) {
    messages = i % 100 === 0 ? [{ role: 'user', content: 'u'.repeat(200) }] : [...messages, { role: 'assistant', content: 'a'.repeat(200) }];
    await store.put({ executionId: `run-${Math.floor(i / 100)}`, nodeId: `turn:${i % 100}`, turn: i % 100, step: 'llm_call', status: 'completed', agentPath: 'agent:b', state: { messages: messages as never } });
  }
  const out: OutboxEvent[] = [];
  for (;;) {
    const page = await store.fetchUnsynced({ limit: 5000, maxBytes: 1e12 });
    if (!page.length) break;
    out.push(...page.map((e) => e.event!));
    await store.markSynced(page.map((e) => e.id));
  }
  await store.close();
  return out;
}

async function viaPlane(events: OutboxEvent[], databaseUrl?: string): Promise<number> {
  const database = await openPlaneDatabase(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' });
  const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), { database, logger: pino({ level: 'silent' }) });
  const { key } = await createKey(database.db, { project: 'bench', scopes: ['ingest'] });
  const t0 = performance.now();
  for (let i = 0; i < events.length; i += BATCH) {
    const res = await fetch(`${plane.url}/v1/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ protocol: 1, writerId: 'bench', rows: events.slice(i, i + BATCH) }),
    });
    const body = (await res.json()) as { accepted: number };
    if (res.status !== 200 || body.accepted !== Math.min(BATCH, events.length - i)) throw new Error(`ingest failed: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  }
  const rate = events.length / ((performance.now() - t0) / 1000);
  await plane.close();
  await database.close();
  return rate;
}

const events = await makeEvents();
const out: Record<string, number> = {};
if (which !== 'pglite') {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  const name = `waymark_bench_ingest_${process.pid}`;
  await sql.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  out['raw postgres insert'] = await rawPostgres(PG, events, BATCH);
  out['plane ingest (postgres)'] = await viaPlane(events, url.toString());
  await sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  await sql.end();
}
if (which !== 'postgres') {
  out['raw pglite insert'] = await rawPglite(events, BATCH);
  out['plane ingest (pglite)'] = await viaPlane(events);
}
for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(26)} ${Math.round(v).toString().padStart(7)} rows/s`);
if (out['raw postgres insert']) console.log(`postgres: plane ingest is ${(out['plane ingest (postgres)'] / out['raw postgres insert']).toFixed(2)} of the raw insert rate`);
if (out['raw pglite insert']) console.log(`pglite: plane ingest is ${(out['plane ingest (pglite)'] / out['raw pglite insert']).toFixed(2)} of the raw insert rate`);
console.log(JSON.stringify({ bench: 'ingest', rows: N, batch: BATCH, ...out, date: new Date().toISOString() }));
