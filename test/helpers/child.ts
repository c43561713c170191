import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** Fork a TypeScript script as a real child process (tsx loader) with an IPC channel. */
export function forkTs(script: string, args: string[] = [], env: Record<string, string> = {}): ChildProcess {
  return fork(script, args, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
}

/** Wait for the next IPC message matching `pred`. */
export function nextMessage<T>(child: ChildProcess, pred: (m: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMsg = (m: T) => {
      if (!pred(m)) return;
      cleanup();
      resolve(m);
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`child exited (code ${code}, signal ${signal}) before answering`));
    };
    const cleanup = () => {
      child.off('message', onMsg);
      child.off('exit', onExit);
    };
    child.on('message', onMsg);
    child.on('exit', onExit);
  });
}

/** Run a script to its end; resolves with its exit code, signal and output. */
export async function runTs(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = forkTs(script, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}
