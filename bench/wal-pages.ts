/**
 * WAL pages a SQLite checkpoint commit writes (what a FULL commit fsyncs): one
 * T-turn run (pseudo-random text) with WAL checkpointing off, then the WAL's
 * frames over the rows; repeated, median [min–max].
 *
 *   npx tsx bench/wal-pages.ts [turns=200] [reps=5]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { ourAgent } from './lib/workload.js';
import { fmt, summary } from './lib/stats.js';

const T = Number(process.argv[2] ?? 200);
const REPS = Number(process.argv[3] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-wal-'));
const per: number[] = [];
let last = { frames: 0, commits: 0, pageSize: 0 };
for (let rep = 0; rep < REPS; rep++) {
  const path = join(dir, `w${rep}.db`);
  const store = new SqliteCheckpointer({ path, synchronous: 'NORMAL' });
  const db = store.connection;
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.pragma('wal_autocheckpoint = 0');
  await ourAgent(store, T, 200, undefined, rep).run('go', { executionId: 'one' });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const frames = (statSync(`${path}-wal`).size - 32) / (pageSize + 24);
  const commits = (db.prepare(`SELECT count(*) AS n FROM checkpoints`).get() as { n: number }).n;
  await store.close();
  per.push(frames / commits);
  last = { frames, commits, pageSize };
}
rmSync(dir, { recursive: true, force: true });
const s = summary(per);
console.log(
  `WAL pages per checkpoint commit, ${T}-turn run, ${REPS} reps: ${fmt(s, 1)} (last rep: ${last.frames} frames of ${last.pageSize} bytes over ${last.commits} commits)`,
);
console.log(
  JSON.stringify({
    bench: 'wal-pages',
    turns: T,
    reps: REPS,
    framesPerCommit: s.median,
    framesPerCommitRange: s,
    ...last,
    date: new Date().toISOString(),
  }),
);
