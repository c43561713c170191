/**
 * Fault hooks for crash tests: end the process, or refuse, at a named point.
 */
import { FAULT_POINTS, isFaultPoint, type FaultHook, type FaultPoint } from '../../support/faults.js';

/**
 * A hook that ends the process at `point` (the `hits`-th time it is reached):
 * with SIGKILL, or `process.exit(code)`. For child processes in crash tests.
 */
export function killAt(
  point: FaultPoint,
  options: { hits?: number; exitCode?: number; signal?: boolean } = {},
): FaultHook {
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

/**
 * The fault point a command line or an environment variable names; throws for
 * a name that is no fault point (a typo would otherwise never fire).
 */
export function faultPoint(name: string): FaultPoint {
  if (!isFaultPoint(name)) throw new Error(`unknown fault point '${name}'; known: ${FAULT_POINTS.join(', ')}`);
  return name;
}
