/**
 * The floor under a durable step at `synchronous=NORMAL`: the statements of
 * one waymark checkpoint (lease renewal, execution row, checkpoint, outbox
 * entry) with precomputed texts, no agent loop and no codec, beside the raw
 * one-row commit of the same size. Per commit: wall µs and CPU µs.
 *
 *   npx tsx bench/profile-floor.ts [commits=4000] [reps=3]
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../client/store/migrations.js';
import { randomText } from './lib/text.js';
import { timed } from './lib/stats.js';

const N = Number(process.argv[2] ?? 4000);
const REPS = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'waymark-profile-floor-'));
let k = 0;

/** WAYMARK_FLOOR_AUTOCHECKPOINT=<pages>: SQLite's `wal_autocheckpoint` (default 1000), to see what the WAL checkpoints cost. */
const AUTOCHECKPOINT = process.env.WAYMARK_FLOOR_AUTOCHECKPOINT;

function open(): Database.Database {
  const db = new Database(join(dir, `${++k}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  if (AUTOCHECKPOINT) db.pragma(`wal_autocheckpoint = ${Number(AUTOCHECKPOINT)}`);
  return db;
}

async function time(db: Database.Database, each: (i: number) => void): Promise<string> {
  const t = await timed(() => {
    for (let i = 0; i < N; i++) db.transaction(each).immediate(i);
  });
  db.close();
  return `${((t.secs / N) * 1e6).toFixed(0)} µs wall, ${((t.cpuSecs / N) * 1e6).toFixed(0)} µs CPU`;
}

const bodies = Array.from({ length: 64 }, (_, i) => randomText(600, 7, i));
async function raw(): Promise<string> {
  const db = open();
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, e TEXT, seq INTEGER, body TEXT)');
  const ins = db.prepare('INSERT INTO t (e, seq, body) VALUES (?, ?, ?)');
  return time(db, (i) => ins.run('e', i, bodies[i % 64]));
}

const states = Array.from({ length: 64 }, (_, i) =>
  JSON.stringify({
    v: 1,
    kind: 'delta',
    base: 0,
    prev: 'x',
    keep: 3,
    append: [{ role: 'assistant', content: randomText(200, 6, i) }],
    set: { turn: i },
    unset: [],
  }),
);
async function statements(outbox: boolean): Promise<string> {
  const db = open();
  for (const m of MIGRATIONS) db.exec(m.sqlite);
  const renew = db.prepare(`UPDATE leases SET expires_at = ? WHERE execution_id = ? AND holder = ? AND epoch = ?`);
  const lease = db.prepare(`INSERT INTO leases (execution_id, holder, epoch, expires_at) VALUES (?, 'h', 1, 0)`);
  const getExec = db.prepare('SELECT next_seq, last_id FROM executions WHERE execution_id = ?');
  const upsert = db.prepare(
    `INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at) VALUES (?, ?, ?, 'turn:1', 'llm_call', 'completed', ?)
     ON CONFLICT (execution_id) DO UPDATE SET next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id,
       last_step = excluded.last_step, last_status = excluded.last_status, updated_at = excluded.updated_at WHERE excluded.next_seq > executions.next_seq`,
  );
  const insert = db.prepare(
    `INSERT INTO checkpoints (id, execution_id, seq, node_id, turn, step, status, agent_path, state, node_input, created_at, writer_id) VALUES (?, ?, ?, 'turn:1/tool:work', 1, 'tool_call', 'completed', 'agent:bench/tool:work', ?, '{"t":1}', ?, 'sqlite-0190aaaa-aaaa-7bbb-8ccc-dddddddddddd')`,
  );
  const queue = db.prepare(
    `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, 'checkpoint', ?, NULL, 700, ?)`,
  );
  for (let r = 0; r < N / 40 + 1; r++) lease.run(`run-${r}`);
  return time(db, (i) => {
    const e = `run-${Math.floor(i / 40)}`;
    const id = `0190${String(i).padStart(4, '0')}aa-aaaa-7bbb-8ccc-dddddddddddd`;
    const at = new Date(1e12 + i).toISOString();
    renew.run(Date.now() + 30000, e, 'h', 1);
    getExec.get(e);
    insert.run(id, e, i % 40, states[i % 64], at);
    upsert.run(e, (i % 40) + 1, id, at);
    if (outbox) queue.run(id, e, at);
  });
}

for (let r = 0; r < REPS; r++) {
  console.log(
    `rep ${r + 1}: raw one-row ${await raw()} · waymark statements ${await statements(true)} · without outbox ${await statements(false)}`,
  );
}
rmSync(dir, { recursive: true, force: true });
