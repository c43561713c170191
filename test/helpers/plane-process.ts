/**
 * The real `bin/waymark.mjs` (dist/, built by test/global-setup.ts) as
 * separate processes: a serving plane, and one-shot commands.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin/waymark.mjs');

export interface PlaneProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  /** SIGTERM, wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL, wait for the exit. */
  kill(): Promise<void>;
}

/** Start `waymark plane ARGS` and wait for it to say where it listens. */
export async function startPlaneProcess(
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; command?: [string, string[]] } = {},
): Promise<PlaneProcess> {
  // `command`: start it some other way (a shell running package.json's start script), the arguments then its own,
  // in a process group of its own so that a test can end whatever the command left behind
  const [file, argv] = o.command ?? [process.execPath, [BIN, 'plane', '--port', '0', ...args]];
  const child = spawn(file, argv, {
    detached: o.command !== undefined,
    cwd: o.cwd ?? ROOT,
    env: { ...process.env, WAYMARK_LOG_LEVEL: 'silent', ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      // the admin key line is the last of the start-up lines
      if (m && /^(first start|admin key|in-memory database):/m.test(out)) {
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
        resolve(m[1]);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`plane exited (${code}) before listening: ${out}${err}`));
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    // 'close': ended and its output all read (what it printed just before exiting can arrive after 'exit'); a command's
    // leftovers may hold its pipes open, so for one, its own exit
    const ended = once(child, o.command ? 'exit' : 'close');
    child.kill(signal);
    await ended;
  };
  return { child, url, stdout: () => out, stop: () => end('SIGTERM'), kill: () => end('SIGKILL') };
}

/** Run `waymark ARGS` to its end. */
export function waymark(args: string[], o: { cwd?: string; env?: Record<string, string> } = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: o.cwd ?? ROOT,
    env: { ...process.env, ...o.env },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Async variant (the test process keeps serving its own timers while the command runs). */
export async function waymarkAsync(args: string[], o: { cwd?: string; env?: Record<string, string> } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: o.cwd ?? ROOT,
    env: { ...process.env, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** Poll `check` until it returns true; resolves with the ms it took, or throws after `deadlineMs`. */
export async function pollUntil(check: () => Promise<boolean>, deadlineMs = 60_000, everyMs = 20): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > deadlineMs) throw new Error(`condition not met within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A process's parent pid and state letter from /proc (Linux), or null once it is gone. */
function procStat(pid: number): { ppid: number; state: string } | null {
  try {
    // the command name may hold spaces and parentheses: the fields start after its last ')'
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.split(' ');
    return { state: fields[0], ppid: Number(fields[1]) };
  } catch {
    return null;
  }
}

/** The server a shell (`sh -c`) runs: the shell's child, or the shell itself when it exec'd the command. */
export function serverPid(shellPid: number): number {
  for (const d of readdirSync('/proc')) {
    if (/^\d+$/.test(d) && procStat(Number(d))?.ppid === shellPid) return Number(d);
  }
  return shellPid;
}

/** The process has exited: gone, or a zombie its new parent has not reaped yet (a container's PID 1 may never). */
export function hasExited(pid: number): boolean {
  const s = procStat(pid);
  return s === null || s.state === 'Z';
}

/** SIGKILL whatever is left in a process group (a test's cleanup; the group's id is its first process's pid). */
export function endGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // the group is empty: nothing was left
  }
}

/**
 * The plane's promise "a revoked key is refused within `withinMs`" (docs/OPERATIONS.md: within 1 s), proven without
 * asking how fast this machine is. `since`: a moment (performance.now()) after the revocation committed,
 * e.g. when the revoke command or page returned. `status()` asks the plane once with the revoked key.
 * Polls until a request is refused (401); every request *sent* `withinMs` or more after `since` must be
 * refused: a 200 (or any other answer) to one of them breaks the promise, and fails at once. A loaded
 * machine only delays the requests (each is then sent later, so it is judged at least as strictly); it
 * cannot turn a refusal into a stale 200, so this fails only when the plane still accepts the key, never
 * because one request was slow (the loop ends by the first request sent past `withinMs`; a request that
 * hangs is the test timeout's). Resolves with the answers in order.
 */
export async function refusedWithin(
  status: () => Promise<number>,
  since: number,
  withinMs: number,
): Promise<{ sentAfterMs: number; status: number }[]> {
  const answers: { sentAfterMs: number; status: number }[] = [];
  for (;;) {
    const sentAfterMs = performance.now() - since;
    const s = await status();
    answers.push({ sentAfterMs: Math.round(sentAfterMs), status: s });
    if (s === 401) {
      // and it stays refused: a few more requests, each refused too
      for (let i = 0; i < 3; i++) {
        const again = await status();
        answers.push({ sentAfterMs: Math.round(performance.now() - since), status: again });
        if (again !== 401)
          throw new Error(`the revoked key was refused, then answered ${again} (${JSON.stringify(answers.slice(-4))})`);
      }
      return answers;
    }
    if (sentAfterMs >= withinMs)
      throw new Error(
        `a request sent ${Math.round(sentAfterMs)} ms after the revocation was answered ${s}, not 401 (${answers.length} requests, none refused; the last: ${JSON.stringify(answers.slice(-3))})`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}
