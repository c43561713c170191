/**
 * Named fault points. Library code calls `fault('store.put.afterCommit')` at
 * each commit boundary; production passes nothing (a no-op). Crash tests pass
 * a hook that kills the process at the named point.
 */
export type FaultHook = (point: string) => void;

export const noFaults: FaultHook = () => {};

/**
 * A hook that ends the process at `point` (the `hits`-th time it is reached):
 * with SIGKILL, or `process.exit(code)`. For child processes in crash tests.
 */
export function killAt(point: string, options: { hits?: number; exitCode?: number; signal?: boolean } = {}): FaultHook {
  let seen = 0;
  const hits = options.hits ?? 1;
  return (p) => {
    if (p !== point) return;
    seen++;
    if (seen < hits) return;
    if (options.signal === false) process.exit(options.exitCode ?? 2);
    process.kill(process.pid, 'SIGKILL');
  };
}
