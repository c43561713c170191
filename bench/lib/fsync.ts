/**
 * The disk's raw fsync rate, printed beside every SQLite ratio: on a shared
 * machine it drifts by 2× within minutes, and a FULL commit is bound by it.
 * A 4 KiB overwrite of a preallocated file then `fdatasync`, in a loop.
 */
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** fdatasync/s in `dir` (the directory the SQLite files live in), over about `ms` milliseconds. */
export function fsyncRate(dir: string, ms = 300): number {
  const path = join(dir, `fsync-probe-${process.pid}`);
  const fd = openSync(path, 'w');
  const page = Buffer.alloc(4096, 7);
  try {
    for (let i = 0; i < 64; i++) writeSync(fd, page, 0, page.length, i * 4096);
    fdatasyncSync(fd);
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ms || n < 5) {
      writeSync(fd, page, 0, page.length, (n % 64) * 4096);
      fdatasyncSync(fd);
      n++;
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}
