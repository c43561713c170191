import { stableStringify, jsonProblem, type Json } from '../../shared/json.js';
import { WaymarkError } from '../../shared/errors.js';
import { IdempotencyError } from '../errors.js';
import { currentRun } from './context.js';

export interface IdempotentOptions<A extends unknown[]> {
  /** A fixed key, or one computed from the arguments. Default: function name + stable JSON of the arguments. */
  key?: string | ((...args: A) => string);
}

/**
 * Wrap a side effect so it runs at most once per run. Inside a run the result
 * is cached by (executionId, key): a hit (a stored null included) returns it
 * without running `fn`. Results must be JSON (refused with IdempotencyError
 * otherwise). Outside a run, `fn` is simply called.
 */
export function idempotent<A extends unknown[], R>(
  fn: (...args: A) => R | Promise<R>,
  options: IdempotentOptions<A> = {},
): (...args: A) => Promise<R> {
  const name = fn.name;
  return async (...args: A): Promise<R> => {
    const run = currentRun();
    if (!run) return await fn(...args);
    let key: string;
    if (typeof options.key === 'string') key = options.key;
    else if (typeof options.key === 'function') key = options.key(...args);
    else {
      if (!name) throw new IdempotencyError('idempotent() of an anonymous function needs a `key`');
      const problem = jsonProblem(args);
      if (problem) throw new IdempotencyError(`idempotent function '${name}' has arguments with no stable JSON form: ${problem}`);
      key = `${name}:${stableStringify(args)}`;
    }
    let hit;
    try {
      hit = await run.store.getIdempotent(run.executionId, key);
    } catch (e) {
      throw storeFailed(`could not read the idempotency cache for '${key}'`, e);
    }
    if (hit.hit) return hit.result as R;
    const result = await fn(...args);
    const value = result === undefined ? null : (result as unknown);
    const problem = jsonProblem(value);
    if (problem) {
      throw new IdempotencyError(`idempotent function '${name || key}' returned a value that cannot be stored as JSON: ${problem}`);
    }
    try {
      const stored = await run.store.putIdempotent(run.executionId, key, value as Json);
      return stored.result as R;
    } catch (e) {
      throw storeFailed(`the side effect '${name || key}' ran but its result could not be recorded`, e);
    }
  };
}

/**
 * A store failure inside a tool is not a tool result: if the model were told
 * "the tool failed" it could call it again and repeat the side effect. It
 * escapes the run instead (see Agent.invoke), which stays resumable.
 */
function storeFailed(message: string, cause: unknown): WaymarkError {
  return new WaymarkError('STORE_FAILED', `${message}: ${(cause as Error)?.message ?? cause}`, { cause });
}
