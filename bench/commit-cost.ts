/**
 * What a SQLite FULL commit costs, apart from the agent loop: (1) a one-row
 * commit by its size, (2) the statements of one waymark checkpoint (execution
 * head, then the checkpoint carrying its outbox event, on the current schema) beside a raw one-row
 * insert of the same size. Pseudo-random text; repetitions interleaved;
 * medians [min–max], the share of the raw rate taken within a repetition, the
 * disk's raw fsync rate of each repetition beside it.
 *
 *   npx tsx bench/commit-cost.ts [commits=2000] [reps=5]
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outboxStatements } from '../client/sqlite/outbox.js';
import { MIGRATIONS } from '../client/store/migrations.js';
import { fmt, median, ratios, summary } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { randomText } from './lib/text.js';

const N = Number(process.argv[2] ?? 2000);
const REPS = Number(process.argv[3] ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-commit-'));
let k = 0;

function open(): Database.Database {
  const db = new Database(join(dir, `${++k}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/** µs per commit of `each(i)` in its own IMMEDIATE transaction. */
function time(db: Database.Database, each: (i: number) => void): number {
  const tx = db.transaction(each);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) tx.immediate(i);
  const us = ((performance.now() - t0) / N) * 1000;
  db.close();
  return us;
}

function rawRow(bytes: number): number {
  const db = open();
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
  const ins = db.prepare('INSERT INTO t (body) VALUES (?)');
  const bodies = Array.from({ length: 64 }, (_, i) => randomText(bytes, 5, bytes, i));
  return time(db, (i) => ins.run(bodies[i % 64]));
}

const states = Array.from({ length: 64 }, (_, i) =>
  JSON.stringify({ v: 1, kind: 'delta', append: [randomText(450, 6, i)] }),
);
const state = states[0];
function waymarkStatements(): number {
  const db = open();
  for (const m of MIGRATIONS) db.exec(m.sqlite);
  const exec = db.prepare(
    `INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at) VALUES (?, 0, 'x', 'n', 'llm_call', 'completed', 'z')`,
  );
  const head = db.prepare(
    `UPDATE executions SET next_seq = ?, last_id = ?, updated_at = ? WHERE execution_id = ? AND next_seq = ? AND last_id = ?`,
  );
  // the store's own insert (client/sqlite/outbox.ts): checkpointValues, then the event's size
  const insert = db.prepare(outboxStatements.insertQueuedCheckpoint);
  for (let r = 0; r <= N / 400; r++) exec.run(`run-${r}`);
  const id = (i: number) => `0190${String(i).padStart(12, '0')}-aaaa-7bbb-8ccc-dddddddddddd`;
  return time(db, (i) => {
    const e = `run-${Math.floor(i / 400)}`;
    const at = new Date(1e12 + i).toISOString();
    head.run((i % 400) + 1, id(i), at, e, i % 400, i % 400 === 0 ? 'x' : id(i - 1));
    insert.run(
      id(i),
      e,
      i % 400,
      'turn:1',
      1,
      'llm_call',
      'completed',
      'agent:x',
      null,
      states[i % 64],
      null,
      null,
      null,
      null,
      at,
      'w',
      700,
    );
  });
}

const sizes = [500, 4000, 12000, 28000];
const bySize: Record<number, number[]> = Object.fromEntries(sizes.map((s) => [s, []]));
const ours: number[] = [];
const raw: number[] = [];
const fsyncs: number[] = [];
for (let r = 0; r < REPS; r++) {
  fsyncs.push(fsyncRate(dir, 300));
  for (const s of sizes) bySize[s].push(rawRow(s));
  ours.push(waymarkStatements());
  raw.push(rawRow(state.length + 200));
}
rmSync(dir, { recursive: true, force: true });
const fsync = summary(fsyncs);
// µs per commit: the raw rate's share is raw µs over ours, within each repetition
const share = ratios(raw, ours)!;
console.log(
  `SQLite FULL, ${N} commits × ${REPS} reps (median [min–max] µs per commit), raw fsync rate ${fmt(fsync)} /s`,
);
console.log(`one-row commit by size: ${sizes.map((s) => `${s} B ${fmt(summary(bySize[s]))}`).join(' · ')}`);
console.log(
  `waymark checkpoint statements ${fmt(summary(ours))} µs vs raw one-row insert ${fmt(summary(raw))} µs → ${fmt(share, 0, '%')} of the raw rate`,
);
console.log(
  JSON.stringify({
    bench: 'commit-cost',
    commits: N,
    reps: REPS,
    usBySize: Object.fromEntries(sizes.map((s) => [s, median(bySize[s])])),
    oursUs: summary(ours),
    rawUs: summary(raw),
    ofRaw: share,
    fsync,
    date: new Date().toISOString(),
  }),
);
