/**
 * The data dir lock itself (plane/db/lock.ts), with real processes: a race
 * for one lock, a stale lock raced for, and a plane refused while a command
 * holds its folder.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { lockDataDir, lockHolder, procIdentity } from '../../plane/db/lock.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { waymarkAsync } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-lock-');
afterAll(() => tmp.cleanup());
const CHILD = join(import.meta.dirname, 'lock-child.ts');

async function race(
  dir: string,
  n: number,
  env: Record<string, string> = {},
): Promise<{ locked: number; refused: { code: string; pid: number }[] }> {
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < n; i++) children.push(forkTs(CHILD, [dir], env));
    await Promise.all(children.map((c) => nextMessage(c, (m: { type: string }) => m.type === 'ready')));
    const answers = children.map((c) =>
      nextMessage<{ type: string; code: string; pid: number }>(c, (m) => m.type !== 'ready'),
    );
    for (const c of children) c.send({ go: true });
    const all = await Promise.all(answers);
    const winner = children[all.findIndex((a) => a.type === 'locked')];
    return {
      locked: all.filter((a) => a.type === 'locked').length,
      refused: all.filter((a) => a.type === 'refused').map((a) => ({ code: a.code, pid: a.pid - (winner?.pid ?? 0) })),
    };
  } finally {
    await Promise.all(
      children.map(async (c) => {
        const exited = once(c, 'exit');
        c.send({ exit: true });
        await exited;
      }),
    );
  }
}

describe('the data dir lock', () => {
  it('8 processes race for one free data dir: exactly one holds it, the others get DATA_DIR_LOCKED naming it', async () => {
    const dir = tmp.file('free');
    mkdirSync(dir, { recursive: true });
    const r = await race(dir, 8);
    expect(r.locked).toBe(1);
    expect(r.refused).toEqual(Array.from({ length: 7 }, () => ({ code: 'DATA_DIR_LOCKED', pid: 0 })));
    expect(lockHolder(dir)).toBeNull();
  });

  it('8 processes race for a stale lock (its pid is dead), each pausing 300 ms between finding it stale and breaking it: exactly one takes it over', async () => {
    const dir = tmp.file('stale');
    mkdirSync(dir, { recursive: true });
    // a pid that is not running: a short-lived child that has exited
    const dead = forkTs(CHILD, [dir]);
    const pid = dead.pid!;
    await nextMessage(dead, () => true);
    dead.kill('SIGKILL');
    await once(dead, 'exit');
    writeFileSync(
      join(dir, 'plane.lock'),
      JSON.stringify({ pid, url: 'http://127.0.0.1:1', command: 'waymark plane', since: '2026-01-01T00:00:00.000Z' }),
    );
    expect(lockHolder(dir)).toBeNull();
    const r = await race(dir, 8, { WAYMARK_LOCK_BREAK_DELAY_MS: '300' });
    expect(r.locked).toBe(1);
    expect(r.refused.every((x) => x.code === 'DATA_DIR_LOCKED' && x.pid === 0)).toBe(true);
  });

  it.skipIf(procIdentity(process.pid) === null)(
    "a lock whose pid was reused by another process (a restarted container's pid 1) is stale: the new process takes it",
    async () => {
      const dir = tmp.file('reused');
      mkdirSync(dir, { recursive: true });
      // the pid is alive (this very process), but the lock was written by an earlier process with that pid
      const [boot] = procIdentity(process.pid)!.split(':');
      writeFileSync(
        join(dir, 'plane.lock'),
        JSON.stringify({
          pid: process.pid,
          proc: `${boot}:1`,
          url: 'http://127.0.0.1:1',
          command: 'waymark plane',
          since: '2026-01-01T00:00:00.000Z',
        }),
      );
      expect(lockHolder(dir)).toBeNull();
      const lock = lockDataDir(dir, 'test');
      expect(lockHolder(dir)).toMatchObject({ pid: process.pid, proc: procIdentity(process.pid), command: 'test' });
      lock.release();
    },
  );

  it('a plane does not start on a data dir a command holds: DATA_DIR_LOCKED names the command and its pid', async () => {
    const dir = tmp.file('held');
    mkdirSync(dir, { recursive: true });
    const lock = lockDataDir(dir, 'waymark plane keys create');
    try {
      const r = await waymarkAsync(['plane', '--data-dir', dir, '--port', '0']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `DATA_DIR_LOCKED: the plane data dir ${dir} is in use by process ${process.pid} ('waymark plane keys create'`,
      );
      expect(r.stderr).toContain('wait for it to finish, or stop it');
      const k = await waymarkAsync(['plane', 'keys', 'list', '--data-dir', dir]);
      expect(k.code).toBe(1);
      expect(k.stderr).toContain('DATA_DIR_LOCKED');
    } finally {
      lock.release();
    }
    expect(lockHolder(dir)).toBeNull();
  });
});
