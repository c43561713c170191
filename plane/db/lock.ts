/**
 * One process per PGlite data dir. PGlite is an embedded database: two
 * processes on one folder each keep their own view of it, lose each other's
 * writes (a revocation came back after a restart) and can corrupt it. The
 * process that opens the folder holds `<dir>/plane.lock` until it closes it;
 * every other process that would open it gets DATA_DIR_LOCKED naming the
 * holder (pid, url, command). A Postgres plane holds its data dir's lock too
 * (plane/server.ts): the dir holds its admin-key file, and the lock its URL,
 * which `waymark plane keys …` goes through on either backend.
 *
 * Hand-written: STACK.md names no lock library, and the common one
 * (proper-lockfile) decides staleness by mtime, which a busy plane would have
 * to keep refreshing; here a lock is stale exactly when its pid is dead.
 *
 * - Taking it: the content is written to a private file first and hard-linked
 *   to `plane.lock` (link fails if the name exists), so a lock is never seen
 *   half-written.
 * - A stale lock (its process is gone: SIGKILL, power loss; on Linux a pid
 *   reused by another process, say a restarted container's pid 1, does not
 *   count as the holder) is broken under a
 *   second link-created file (`plane.lock.break`), re-read, and removed only
 *   if it is still the same stale lock, so two starters cannot both break it
 *   and both win.
 */
import { linkSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';

export const LOCK_FILE = 'plane.lock';
const pause = new Int32Array(new SharedArrayBuffer(4));

/** What a lock file says about its holder. */
export interface LockInfo {
  pid: number;
  /**
   * Which process that pid was (Linux: boot id and start time from /proc), so
   * a pid reused after a restart (a container's pid 1) is not taken for the
   * holder; null where /proc is not available (then the pid alone decides).
   */
  proc?: string | null;
  /** The holder's HTTP address when it is a serving plane, else null (a CLI command with the folder open). */
  url: string | null;
  /** What the holder runs (`waymark plane`, `waymark plane keys create` …). */
  command: string;
  since: string;
}

/** This process's hold on a plane's data dir (`lockDataDir`): one plane per data dir. */
export interface DataDirLock {
  readonly dir: string;
  readonly file: string;
  /** Record the URL the plane serves on (read by `waymark plane keys …` to go through it). */
  setUrl(url: string): void;
  /** Give the data dir up: remove the lock file (only while it is still this lock's). */
  release(): void;
}

/** True when a process with that pid exists (EPERM: it exists, owned by someone else). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Linux: `<boot id>:<start time>` of a process, which no later process with the same pid shares; else null. */
export function procIdentity(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the parenthesised command name start at field 3; starttime is field 22
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return start ? `${boot}:${start}` : null;
  } catch {
    return null;
  }
}

/** True when the process a lock names still runs: its pid is alive and, where known, is the same process. */
function holderAlive(info: LockInfo): boolean {
  if (!pidAlive(info.pid)) return false;
  if (!info.proc) return true;
  const now = procIdentity(info.pid);
  return now === null || now === info.proc;
}

/** The holder named in a data dir's lock file, or null (no lock, unreadable, or its process is gone). */
export function lockHolder(dir: string): LockInfo | null {
  const info = readLock(join(resolve(dir), LOCK_FILE));
  return info && holderAlive(info) ? info : null;
}

function readLock(file: string): LockInfo | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const j = JSON.parse(text) as LockInfo;
    return typeof j.pid === 'number' ? j : { pid: 0, url: null, command: 'unknown', since: '' };
  } catch {
    // written by link from a complete file, so never half-written; unparseable means not ours: stale
    return { pid: 0, url: null, command: 'unknown', since: '' };
  }
}

export class DataDirLocked extends WaymarkError {
  readonly holder: LockInfo;
  constructor(dir: string, holder: LockInfo) {
    const who = holder.url ? `a plane serving ${holder.url}` : `'${holder.command}'`;
    const todo = holder.url
      ? `manage keys and projects through it ('waymark plane keys …' finds it by itself, or pass --plane ${holder.url}), or stop it first; a second plane needs a data dir of its own (--data-dir DIR or WAYMARK_PLANE_DIR)`
      : 'wait for it to finish, or stop it';
    super(
      ErrorCode.DATA_DIR_LOCKED,
      `the plane data dir ${dir} is in use by process ${holder.pid} (${who}, since ${holder.since}); one process per data dir: ${todo}`,
      {
        details: { dir, pid: holder.pid, url: holder.url, command: holder.command },
      },
    );
    this.name = 'DataDirLocked';
    this.holder = holder;
  }
}

/**
 * Take the data dir's lock for this process, or throw DataDirLocked naming the
 * live holder. `faults.beforeBreak` (tests) runs between finding a stale lock
 * and breaking it: the window in which another starter may take it.
 */
export function lockDataDir(dirIn: string, command: string, faults: { beforeBreak?: () => void } = {}): DataDirLock {
  const dir = resolve(dirIn);
  const file = join(dir, LOCK_FILE);
  const info: LockInfo = {
    pid: process.pid,
    proc: procIdentity(process.pid),
    url: null,
    command,
    since: new Date().toISOString(),
  };
  const write = (i: LockInfo) => {
    const tmp = join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(4).toString('hex')}`);
    writeFileSync(tmp, `${JSON.stringify(i)}\n`, { mode: 0o600 });
    return tmp;
  };
  for (;;) {
    const tmp = write(info);
    try {
      linkSync(tmp, file);
      unlinkSync(tmp);
      break;
    } catch (e) {
      unlinkSync(tmp);
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const held = readLock(file);
    if (held && holderAlive(held)) throw new DataDirLocked(dir, held);
    faults.beforeBreak?.();
    breakStale(dir, file, held);
    Atomics.wait(pause, 0, 0, 5); // another starter may be breaking it: let it finish
  }
  let released = false;
  return {
    dir,
    file,
    setUrl(url: string) {
      info.url = url;
      const tmp = write(info);
      renameSync(tmp, file);
    },
    release() {
      if (released) return;
      released = true;
      const held = readLock(file);
      if (held?.pid === process.pid && held.since === info.since) unlinkSync(file);
    },
  };
}

function breakStale(dir: string, file: string, seen: LockInfo | null): void {
  const breaker = join(dir, `${LOCK_FILE}.break`);
  const tmp = join(dir, `${LOCK_FILE}.break.${process.pid}.${randomBytes(4).toString('hex')}`);
  writeFileSync(tmp, `${process.pid}\n`, { mode: 0o600 });
  try {
    linkSync(tmp, breaker);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    // someone else is breaking it; if that someone died mid-break, clear its marker
    let pid = 0;
    try {
      pid = Number(readFileSync(breaker, 'utf8').trim());
    } catch {
      return; // it finished meanwhile
    }
    if (!pidAlive(pid)) {
      try {
        unlinkSync(breaker);
      } catch {
        /* another starter cleared it first */
      }
    }
    return;
  } finally {
    unlinkSync(tmp);
  }
  try {
    const now = readLock(file);
    if (now && seen && now.pid === seen.pid && now.since === seen.since && !holderAlive(now)) unlinkSync(file);
  } finally {
    unlinkSync(breaker);
  }
}

/**
 * Undo a data dir that a start made and never served from (PORT_IN_USE after
 * PGlite made its database there): a failed start leaves no data dir, so the
 * keys commands say NO_PLANE_DATA there and the next start is the first one.
 * Run after the start released its lock; the lock is taken again for the
 * removal, so a process that took the dir meanwhile keeps it (nothing is
 * removed). `made` is the first folder the start created (`dir` or a parent
 * of it): the folders from `dir` up to it are removed, each only if empty.
 * `made` undefined: `dir` was there, empty, before the start; only what is in
 * it is removed.
 */
export function removeMadeDataDir(dirIn: string, made: string | undefined, command: string): void {
  const dir = resolve(dirIn);
  let lock: DataDirLock;
  try {
    lock = lockDataDir(dir, command);
  } catch {
    return; // another process holds it (its data dir now), or it is gone
  }
  try {
    // a lock file of a process starting there right now is left (the folder then stays)
    for (const name of readdirSync(dir))
      if (!name.startsWith(LOCK_FILE)) rmSync(join(dir, name), { recursive: true, force: true });
  } catch {
    return; // what could not be removed stays; the start's own error is the one to report
  } finally {
    lock.release();
  }
  if (made === undefined) return;
  const top = resolve(made);
  for (let d = dir; d === top || d.startsWith(`${top}${sep}`); d = dirname(d)) {
    try {
      rmdirSync(d);
    } catch {
      return; // not empty (someone wrote there meanwhile): leave it and its parents
    }
    if (d === top) return;
  }
}
