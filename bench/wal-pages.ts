/**
 * WAL pages a SQLite checkpoint commit writes (what a FULL commit fsyncs): one
 * T-turn run with WAL checkpointing off, then the WAL's frames over the rows.
 *
 *   npx tsx bench/wal-pages.ts [turns=200]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { ourAgent } from './lib/workload.js';

const T = Number(process.argv[2] ?? 200);
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-wal-'));
const path = join(dir, 'w.db');
const store = new SqliteCheckpointer({ path, synchronous: 'NORMAL' });
const db = store.connection;
db.pragma('wal_checkpoint(TRUNCATE)');
db.pragma('wal_autocheckpoint = 0');
await ourAgent(store, T, 200).run('go', { executionId: 'one' });
const pageSize = db.pragma('page_size', { simple: true }) as number;
const frames = (statSync(`${path}-wal`).size - 32) / (pageSize + 24);
const commits = (db.prepare(`SELECT count(*) AS n FROM checkpoints`).get() as { n: number }).n;
await store.close();
rmSync(dir, { recursive: true, force: true });
console.log(`WAL pages per checkpoint commit, ${T}-turn run: ${(frames / commits).toFixed(1)} (${frames} frames of ${pageSize} bytes over ${commits} commits)`);
console.log(JSON.stringify({ bench: 'wal-pages', turns: T, framesPerCommit: frames / commits, frames, commits, pageSize, date: new Date().toISOString() }));
