/**
 * Tries to take a data dir's lock (argv: dir) and reports over IPC; holds it
 * until told to exit. Used to race several real processes for one lock.
 */
import { lockDataDir } from '../../plane/db/lock.js';

const dir = process.argv[2];
process.once('message', () => {
  try {
    // WAYMARK_LOCK_BREAK_DELAY_MS widens the window between finding a stale lock and breaking it
    const delay = Number(process.env.WAYMARK_LOCK_BREAK_DELAY_MS ?? 0);
    const lock = lockDataDir(dir, `lock-child ${process.pid}`, {
      beforeBreak: delay ? () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay) : undefined,
    });
    process.send?.({ type: 'locked' });
    process.once('message', () => {
      lock.release();
      process.exit(0);
    });
  } catch (e) {
    process.send?.({
      type: 'refused',
      code: (e as { code?: string }).code,
      pid: (e as { details?: { pid?: number } }).details?.pid,
    });
    process.once('message', () => process.exit(0));
  }
});
process.send?.({ type: 'ready' });
