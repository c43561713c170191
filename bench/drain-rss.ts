/**
 * Peak client RSS while draining a large backlog (default 1,000,000 rows,
 * pseudo-random text) to a plane in another process. The backlog is written
 * straight into the store's tables in large transactions (this measures the
 * drain, not put()). Each repetition is its own client process, so one's heap
 * does not carry into the next; median [min–max] over them.
 *
 *   npx tsx bench/drain-rss.ts [rows=1000000] [reps=5]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { connectPlane } from '../client/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { outboxStatements } from '../client/sqlite/outbox.js';
import { uuidv7 } from '../shared/ids.js';
import { fmt, summary } from './lib/stats.js';
import { randomText } from './lib/text.js';
import { childCommand, ROOT } from './lib/paths.js';

const N = Number(process.argv[2] ?? 1_000_000);
const REPS = Number(process.argv[3] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const mb = (b: number) => (b / 1024 / 1024).toFixed(0);

if (process.argv[4] !== '--child') {
  const runs: { rowsPerSec: number; rssStartMb: number; rssPeakMb: number }[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const c = spawnSync(process.execPath, [...childCommand(import.meta.url, 'drain-rss'), String(N), '1', '--child'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (c.status !== 0) throw new Error(`drain-rss repetition ${rep + 1} failed (exit ${c.status})`);
    runs.push(JSON.parse(c.stdout.trim().split('\n').at(-1)!));
  }
  const rate = summary(runs.map((r) => r.rowsPerSec));
  const start = summary(runs.map((r) => r.rssStartMb));
  const peak = summary(runs.map((r) => r.rssPeakMb));
  console.log(
    `drain of a ${N}-row backlog to a plane (PGlite, own process), ${REPS} reps, each its own client process: ${fmt(rate)} rows/s; client RSS at start ${fmt(start)} MB, peak ${fmt(peak)} MB`,
  );
  console.log(
    JSON.stringify({
      bench: 'drain-rss',
      rows: N,
      reps: REPS,
      rowsPerSec: rate.median,
      rowsPerSecRange: rate,
      rssStartMb: start.median,
      rssPeakMb: peak.median,
      rssPeakMbRange: peak,
      cores: cpus().length,
      date: new Date().toISOString(),
    }),
  );
  process.exit(0);
}
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-rss-'));

const store = new SqliteCheckpointer({ path: join(dir, 'backlog.db'), synchronous: 'OFF' as never });
const db = store.connection;
// a backlog as the store writes it: each checkpoint waiting on its own row (client/sqlite/outbox.ts)
const insC = db.prepare(outboxStatements.insertQueuedCheckpoint);
const insE =
  db.prepare(`INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at) VALUES (?, ?, ?, ?, 'llm_call', 'completed', ?)
  ON CONFLICT (execution_id) DO UPDATE SET next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id`);
const PER_RUN = 1000;
const now = new Date().toISOString();
for (let i = 0; i < N; i += 10_000) {
  db.transaction(() => {
    for (let j = i; j < Math.min(N, i + 10_000); j++) {
      const id = uuidv7();
      const e = `run-${Math.floor(j / PER_RUN)}`;
      const seq = j % PER_RUN;
      const state = JSON.stringify({ v: 1, kind: 'full', state: { turn: seq, note: randomText(100, 9, j) } });
      insC.run(
        id,
        e,
        seq,
        `turn:${seq}`,
        seq,
        'llm_call',
        'completed',
        'agent:b',
        null,
        state,
        null,
        null,
        null,
        null,
        now,
        store.writerId,
        state.length + 300,
      );
      insE.run(e, seq + 1, id, `turn:${seq}`, now);
    }
  })();
}

const planeDir = join(dir, 'plane');
const plane = spawn(process.execPath, [join(ROOT, 'bin/waymark.mjs'), 'plane', '--data-dir', planeDir, '--port', '0'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve) => {
  plane.stdout!.on('data', (d: Buffer) => {
    const m = /listening on (http:\/\/\S+)/.exec(d.toString());
    if (m) resolve(m[1]);
  });
});
const key = readFileSync(join(planeDir, 'admin-key'), 'utf8').trim();

const base = process.memoryUsage().rss;
let peak = base;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
const t0 = performance.now();
const replica = connectPlane(store, { url, apiKey: key, pollMs: 0 });
let last = 0;
replica.on('ack', () => {
  if (performance.now() - last > 10_000) {
    last = performance.now();
    void store.outboxStats().then((s) => console.error(`  drain: ${N - s.pendingCount}/${N}`));
  }
});
const s = await replica.flush({ timeoutMs: 3_600_000 });
const secs = (performance.now() - t0) / 1000;
clearInterval(sampler);
await replica.stop();
await store.close();
plane.kill('SIGTERM');
rmSync(dir, { recursive: true, force: true });
if (s.pendingRows !== 0) throw new Error(`drain incomplete: ${JSON.stringify(s)}`);
console.error(
  `  drain-rss repetition: ${Math.round(N / secs)} rows/s; client RSS at start ${mb(base)} MB, peak ${mb(peak)} MB`,
);
console.log(
  JSON.stringify({
    bench: 'drain-rss',
    rows: N,
    rowsPerSec: N / secs,
    rssStartMb: base / 1048576,
    rssPeakMb: peak / 1048576,
    cores: cpus().length,
    date: new Date().toISOString(),
  }),
);
