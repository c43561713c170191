/**
 * A supervisor may stop a server the moment it says where it listens (a
 * health check that passed, a test harness, a script that only wanted the
 * port). The stop must still be the graceful one: the plane closes its
 * database and says so, `waymark ui` closes its store; neither dies of the
 * signal. Both once printed their start-up lines before listening for the
 * signal, and a SIGTERM sent on the first line killed them most of the time
 * (CI caught it: 8 of 10 starts here).
 *
 * The signal is sent from the 'data' handler that sees the line, with no
 * await between, as the quickest supervisor would; three starts at once,
 * each judged.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { LOCK_FILE } from '../../plane/db/lock.js';
import { BIN } from '../helpers/plane-process.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-stop-on-start-');
afterAll(() => tmp.cleanup());

/** Start `waymark ARGS`, SIGTERM it in the same tick its output first says `listening on`, and wait for its end. */
async function stopAtFirstLine(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, WAYMARK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let sent = false;
  child.stdout.on('data', (d) => {
    stdout += d;
    if (!sent && stdout.includes('listening on')) {
      sent = true;
      child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (d) => (stderr += d));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

describe('a server stopped as soon as it says where it listens stops gracefully', () => {
  it('waymark plane (PGlite in a data dir): exit 0, the stop said and finished, the data dir lock gone', async () => {
    const dirs = [1, 2, 3].map((i) => tmp.file(`plane-${i}`));
    const ends = await Promise.all(
      dirs.map((dir) => stopAtFirstLine(['plane', '--port', '0', '--data-dir', dir], tmp.dir)),
    );
    for (const [i, r] of ends.entries()) {
      expect({ code: r.code, signal: r.signal, stderr: r.stderr }, `start ${i + 1}: ${r.stdout}`).toEqual({
        code: 0,
        signal: null,
        stderr: '',
      });
      expect(r.stdout).toMatch(/stopping: finishing the requests in hand, then closing the database\nstopped\n$/);
    }
    // closed, not killed: no lock left for the next start to find stale
    for (const dir of dirs) expect(existsSync(join(dir, LOCK_FILE)), dir).toBe(false);
  }, 240_000);

  it('waymark ui: exit 0, not killed by the signal', async () => {
    const db = tmp.file('ui.db');
    const store = new SqliteCheckpointer({ path: db });
    await store.put(step('stop-run', 0));
    await store.close();
    const ends = await Promise.all([1, 2, 3].map(() => stopAtFirstLine(['ui', '--db', db, '--port', '0'], tmp.dir)));
    for (const [i, r] of ends.entries())
      expect({ code: r.code, signal: r.signal, stderr: r.stderr }, `start ${i + 1}: ${r.stdout}`).toEqual({
        code: 0,
        signal: null,
        stderr: '',
      });
  }, 120_000);
});
