/**
 * The floor under a durable step at `synchronous=NORMAL`: the statements of
 * one waymark checkpoint in the shapes the store has had (see `statements`)
 * with precomputed texts, no agent loop and no codec, beside the raw one-row
 * commit of the same size. Per commit: wall µs and CPU µs.
 *
 *   npx tsx bench/profile-floor.ts [commits=4000] [reps=3]
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outboxStatements } from '../client/sqlite/outbox.js';
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
/**
 * One step's statements in the shape of a schema: `five` (before 2026-12-07: lease renewal, execution read,
 * checkpoint, execution upsert, outbox row), `three` (schema 6: the head's compare-and-set, the checkpoint, its
 * outbox row) and `two` (schema 7: the head, then the checkpoint carrying its event's place, client/sqlite/outbox.ts).
 */
async function statements(shape: 'five' | 'three' | 'two'): Promise<string> {
  const db = open();
  for (const m of shape === 'two' ? MIGRATIONS : MIGRATIONS.slice(0, 6)) db.exec(m.sqlite);
  const renew = db.prepare(`UPDATE leases SET expires_at = ? WHERE execution_id = ? AND holder = ? AND epoch = ?`);
  const lease = db.prepare(`INSERT INTO leases (execution_id, holder, epoch, expires_at) VALUES (?, 'h', 1, 0)`);
  const exec = db.prepare(
    `INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at) VALUES (?, 0, 'x', 'turn:1', 'llm_call', 'completed', 'z')`,
  );
  const getExec = db.prepare('SELECT next_seq, last_id FROM executions WHERE execution_id = ?');
  const upsert = db.prepare(
    `INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at) VALUES (?, ?, ?, 'turn:1', 'llm_call', 'completed', ?)
     ON CONFLICT (execution_id) DO UPDATE SET next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id,
       last_step = excluded.last_step, last_status = excluded.last_status, updated_at = excluded.updated_at WHERE excluded.next_seq > executions.next_seq`,
  );
  const head = db.prepare(
    `UPDATE executions SET next_seq = ?, last_id = ?, updated_at = ? WHERE execution_id = ? AND next_seq = ? AND last_id = ?`,
  );
  const COLUMNS = `id, execution_id, seq, node_id, turn, step, status, agent_path, state, node_input, created_at, writer_id`;
  const VALUES = `?, ?, ?, 'turn:1/tool:work', 1, 'tool_call', 'completed', 'agent:bench/tool:work', ?, '{"t":1}', ?, 'sqlite-0190aaaa-aaaa-7bbb-8ccc-dddddddddddd'`;
  const insert = db.prepare(`INSERT INTO checkpoints (${COLUMNS}) VALUES (${VALUES})`);
  const queue =
    shape === 'two'
      ? null
      : db.prepare(
          `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, 'checkpoint', ?, NULL, 700, ?)`,
        );
  // the store's own insert (client/sqlite/outbox.ts): checkpointValues, then the event's size
  const insertQueued = shape === 'two' ? db.prepare(outboxStatements.insertQueuedCheckpoint) : null;
  for (let r = 0; r < N / 40 + 1; r++) {
    lease.run(`run-${r}`);
    if (shape !== 'five') exec.run(`run-${r}`);
  }
  const id = (i: number) => `0190${String(i).padStart(6, '0')}aa-aaaa-7bbb-8ccc-dddddddddddd`;
  return time(db, (i) => {
    const e = `run-${Math.floor(i / 40)}`;
    const at = new Date(1e12 + i).toISOString();
    if (shape === 'five') {
      renew.run(Date.now() + 30000, e, 'h', 1);
      getExec.get(e);
      insert.run(id(i), e, i % 40, states[i % 64], at);
      upsert.run(e, (i % 40) + 1, id(i), at);
      queue?.run(id(i), e, at);
      return;
    }
    head.run((i % 40) + 1, id(i), at, e, i % 40, i % 40 === 0 ? 'x' : id(i - 1));
    if (insertQueued)
      insertQueued.run(
        id(i),
        e,
        i % 40,
        'turn:1/tool:work',
        1,
        'tool_call',
        'completed',
        'agent:bench/tool:work',
        null,
        states[i % 64],
        '{"t":1}',
        null,
        null,
        null,
        at,
        'sqlite-0190aaaa-aaaa-7bbb-8ccc-dddddddddddd',
        700,
      );
    else {
      insert.run(id(i), e, i % 40, states[i % 64], at);
      queue?.run(id(i), e, at);
    }
  });
}

for (let r = 0; r < REPS; r++) {
  console.log(
    `rep ${r + 1}: raw one-row ${await raw()} · five statements ${await statements('five')} · three (schema 6) ${await statements('three')} · two (schema 7) ${await statements('two')}`,
  );
}
rmSync(dir, { recursive: true, force: true });
