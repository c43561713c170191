/**
 * `idempotent`: a side effect that runs once per (execution, key).
 *
 * Keys. An explicit `key` (a string, or a function of the arguments) is used
 * as given. The default key is `name:` followed by the sha256 (hex) of the
 * stable JSON of the arguments: fixed length, whatever the arguments. Every
 * key is checked (1..512 characters of well-formed text) before `fn` runs, so
 * a key the store would refuse never costs a side effect. A function whose
 * name could belong to many functions (empty, `anonymous`, `default`,
 * `bound …`) needs an explicit key, refused when `idempotent()` is called.
 * Earlier versions used `name:` + the stable JSON itself as the default key;
 * a store may still hold entries under it, so that key is looked up as well.
 *
 * Results. Once `fn` has run, nothing may invite a repeat. Its result is
 * recorded in its JSON form (what `JSON.stringify` gives: undefined fields
 * dropped, a Date as its string, `toJSON` honoured), and that form is what
 * every call returns, the first included, so a replay sees what the first pass
 * saw; text no store can hold (a lone surrogate, U+0000) becomes U+FFFD. A
 * result with no JSON form at all (a BigInt, a cycle), or over the row limit
 * (`LIMITS.rowBytes` as sent: a plane could not hold it, and a machine that
 * restored the run would run the effect again), is EFFECT_NOT_RECORDED, and a
 * store failure is STORE_FAILED: both escape the run (see Agent), never a
 * tool failure the model could answer by calling the tool again.
 *
 * Leases. Inside a run that holds a lease, `fn` starts only once the store
 * confirmed the lease (a fenced renewal: a runner that stalled while another
 * took the run over learns it here, not after the effect). The record names
 * the lease: a runner taken over or cancelled while `fn` ran still records
 * the result (the effect happened: whoever runs the run next must find it)
 * and then stops (LeaseLost, RunCancelled); a run deleted meanwhile records
 * nothing, so no entry outlives it.
 *
 * Concurrency. Calls with the same key in flight at once, in one store and
 * execution, share one promise: one effect. A call of another runner (after a
 * takeover, or of a run deleted and started again under the id) that ends
 * refused for its lost lease is not shared: this runner then asks the store.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { stableStringify, jsonProblem, storableJson, textProblem, type Json } from '../../shared/json.js';
import { ErrorCode, WaymarkError, hasCode } from '../../shared/errors.js';
import { optionNames, optionsProblems, refuse } from '../../support/validate.js';
import { LIMITS } from '../../shared/limits.js';
import { DIGEST_LENGTH } from '../../shared/idempotency-key.js';
import type { Checkpointer, IdempotentLookup, PlaneRenewal } from '../checkpointer.js';
import { EffectNotRecorded, IdempotencyError, IdempotencyKeyRequired, InvalidIdempotencyKey } from '../errors.js';
import { currentRun, type RunContext } from './context.js';
import { isLeaseLoss } from './lease.js';

/** Options of `idempotent`: the key its recorded result is stored under. */
export interface IdempotentOptions<A extends unknown[]> {
  /**
   * A fixed key, or one computed from the arguments (1..512 characters).
   * Default: `name:` + sha256 hex of the stable JSON of the arguments.
   */
  key?: string | ((...args: A) => string);
}

/**
 * What a side effect running inside `idempotent` may hand to the service it
 * calls (`currentEffect()`), so that service can dedupe it too: a process
 * that stalled after its last lease check and woke after another machine took
 * the run over would otherwise repeat an effect no store can stop.
 */
export interface EffectInfo {
  /**
   * The same for this effect on every machine and every retry of the run
   * (`waymark:<executionId>:<key>`, at most 600 characters): send it as the
   * service's idempotency key (an `Idempotency-Key` header, Stripe's
   * `idempotency_key`), and a repeat is answered with the first result.
   */
  idempotencyKey: string;
  executionId: string;
  /** The call's key within the run (the `key` option, or the default). */
  key: string;
  /**
   * The run's owner epoch at the plane when this runner's hold was confirmed
   * there just before the effect (it grows with each change of owner: a
   * takeover, a claim, a cancel); null when no plane answered (unconnected,
   * or unreachable): unknown, not lowest. A fencing token: a service that
   * remembers the highest epoch it saw for a run can refuse a call carrying a
   * lower one, from a runner whose run changed owner since its confirm.
   */
  epoch: number | null;
}

const effects = new AsyncLocalStorage<EffectInfo>();

/**
 * The side effect running now, inside an `idempotent` function's body (null
 * elsewhere): its stable idempotency key for the service it calls.
 */
export function currentEffect(): EffectInfo | null {
  return effects.getStore() ?? null;
}

/** The key of one call, and the pre-digest default key an older version may have stored. */
interface CallKey {
  key: string;
  legacy?: string;
}

/** Names that say nothing about which function they belong to. */
const GENERIC_NAME = /^(?:|anonymous|default|bound .*)$/s;

const IDEMPOTENT_OPTIONS = optionNames<IdempotentOptions<unknown[]>>({ key: true });

/**
 * Wrap a side effect so it runs at most once per run. Inside a run the result
 * is recorded by (executionId, key): a hit (a stored null included) returns it
 * without running `fn`. Every call inside a run resolves to the recorded JSON
 * form (a `Date` field comes back as its string, whatever `R` says). Outside a
 * run, `fn` is simply called.
 */
export function idempotent<A extends unknown[], R>(
  fn: (...args: A) => R | Promise<R>,
  options: IdempotentOptions<A> = {},
): (...args: A) => Promise<R> {
  refuse('idempotent', optionsProblems(options, IDEMPOTENT_OPTIONS));
  const keyOf = keyFunction<A>(fn.name, options.key);
  const what = (key: string) => fn.name || key;
  return async (...args: A): Promise<R> => {
    const run = currentRun();
    if (!run) return await fn(...args);
    const call = keyOf(args);
    try {
      return (await shared(run, call.key, () => once(run, call, what(call.key), () => fn(...args)))) as R;
    } catch (e) {
      if (
        run.tool &&
        (hasCode(e, ErrorCode.STORE_FAILED) || hasCode(e, ErrorCode.EFFECT_NOT_RECORDED) || isLeaseLoss(e))
      ) {
        run.tool.escaped ??= e as Error;
      }
      throw e;
    }
  };
}

/** Resolve the key option once: a fixed key is checked now, a generic name refused now. */
function keyFunction<A extends unknown[]>(name: string, key: IdempotentOptions<A>['key']): (args: A) => CallKey {
  if (typeof key === 'string') {
    checkKey(key, 'the `key` option');
    return () => ({ key });
  }
  if (typeof key === 'function') {
    return (args) => {
      const k = key(...args);
      checkKey(k, `the \`key\` function of '${name || 'idempotent'}'`);
      return { key: k };
    };
  }
  if (GENERIC_NAME.test(name)) throw new IdempotencyKeyRequired(name);
  checkKey(`${name}:${'0'.repeat(DIGEST_LENGTH)}`, `the default key of '${name}' (its name)`);
  return (args) => {
    const problem = jsonProblem(args);
    if (problem)
      throw new IdempotencyError(`idempotent function '${name}' has arguments with no stable JSON form: ${problem}`);
    const text = stableStringify(args);
    const legacy = `${name}:${text}`;
    return {
      key: `${name}:${createHash('sha256').update(text).digest('hex')}`,
      ...(keyProblem(legacy) ? {} : { legacy }),
    };
  };
}

function keyProblem(key: unknown): string | null {
  if (typeof key !== 'string') return `a ${typeof key}, not a string`;
  if (key.length === 0 || key.length > LIMITS.idempotencyKeyLength) {
    return `${key.length} characters, outside 1..${LIMITS.idempotencyKeyLength}`;
  }
  return textProblem(key, 'key');
}

function checkKey(key: unknown, what: string): asserts key is string {
  const problem = keyProblem(key);
  if (problem) throw new InvalidIdempotencyKey(`${what} is not a usable idempotency key: ${problem}`, { problem });
}

/** In-flight calls per store, by (executionId, key), each with the runner (its lease's holder) that made it: the store object scopes them, nothing is process-global. */
const inflight = new WeakMap<Checkpointer, Map<string, { holder: string | null; promise: Promise<unknown> }>>();

function shared(run: RunContext, key: string, body: () => Promise<unknown>): Promise<unknown> {
  let calls = inflight.get(run.store);
  if (!calls) inflight.set(run.store, (calls = new Map()));
  const id = JSON.stringify([run.executionId, key]);
  const holder = run.lease?.lease.holder ?? null;
  const pending = calls.get(id);
  if (pending) {
    if (pending.holder === holder) return pending.promise;
    // Another runner's call (one this runner took the run over from, or of a run deleted and started again under
    // this id): its outcome is this runner's only once recorded. Refused for a lost lease, this runner asks the store
    // itself: a record that was kept (a takeover) is found; none (a run deleted) and the effect is this run's to run.
    return pending.promise.catch((e: unknown) => {
      if (!isLeaseLoss(e)) throw e;
      return shared(run, key, body);
    });
  }
  const promise = body().finally(() => {
    if (calls.get(id)?.promise === promise) calls.delete(id);
  });
  calls.set(id, { holder, promise });
  return promise;
}

async function once(run: RunContext, call: CallKey, what: string, fn: () => unknown): Promise<Json | null> {
  const hit = await lookup(run, call);
  if (hit.hit) return hit.result;
  const confirmed = await leaseConfirmed(run, what, call.key);
  if (confirmed.recorded) {
    // the plane held its record (a runner that lost the run made it after this one took it): that is the result
    const recorded = await lookup(run, call);
    if (recorded.hit) return recorded.result;
  }
  const info: EffectInfo = {
    idempotencyKey: `waymark:${run.executionId}:${call.key}`,
    executionId: run.executionId,
    key: call.key,
    epoch: confirmed.epoch,
  };
  const value = jsonForm(await effects.run(info, fn), what);
  try {
    const recorded = (
      await run.store.putIdempotent(
        run.executionId,
        call.key,
        value,
        run.lease ? { lease: run.lease.lease, anchorId: run.rowId } : {},
      )
    ).result;
    // connected: the record reaches the plane before the effect returns, so a machine that takes the run over after
    // this one dies knows the effect ran (a third of the lease at most: an unreachable plane is not waited for)
    await run.store.planeGuard.current?.recorded?.({
      timeoutMs: Math.max(100, Math.floor((run.lease?.lease.ttlMs ?? 30_000) / 3)),
    });
    return recorded;
  } catch (e) {
    if (hasCode(e, ErrorCode.INVALID_ROW)) {
      throw new EffectNotRecorded(
        `the side effect '${what}' ran but the store refused its result: ${(e as Error).message}`,
        { cause: e },
      );
    }
    // taken over or cancelled while the effect ran (recorded all the same), or the run deleted (not recorded): this runner stops
    if (isLeaseLoss(e)) throw e;
    throw storeFailed(`the side effect '${what}' ran but its result could not be recorded`, e);
  }
}

/**
 * Before a side effect: the store confirms this runner still holds the run.
 * A runner that stalled past its lease (its renewal timer could not fire)
 * while another took the run over must not start the effect the other one
 * runs; nor may a runner whose run was cancelled or deleted.
 */
async function leaseConfirmed(run: RunContext, what: string, key: string): Promise<PlaneRenewal> {
  if (!run.lease) return { recorded: false, epoch: null };
  try {
    return await run.lease.confirm(key);
  } catch (e) {
    if (isLeaseLoss(e)) throw e;
    throw storeFailed(`could not confirm this runner's lease before the side effect '${what}'`, e);
  }
}

async function lookup(run: RunContext, call: CallKey): Promise<IdempotentLookup> {
  try {
    const hit = await run.store.getIdempotent(run.executionId, call.key);
    if (hit.hit || !call.legacy) return hit;
    return await run.store.getIdempotent(run.executionId, call.legacy);
  } catch (e) {
    throw storeFailed(`could not read the idempotency cache for '${call.key}'`, e);
  }
}

/**
 * The result as JSON.stringify sees it, parsed back; undefined (or a function)
 * is null. Text no store can hold (a lone surrogate, as `text.slice(0, n)` can
 * leave of an emoji; U+0000) becomes U+FFFD, as in model and tool output.
 */
function jsonForm(result: unknown, what: string): Json | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (e) {
    throw new EffectNotRecorded(
      `the side effect '${what}' ran but its result has no JSON form: ${(e as Error)?.message ?? e}`,
      { cause: e },
    );
  }
  let value: Json | null;
  try {
    const parsed = text === undefined ? null : (JSON.parse(text) as Json);
    value = jsonProblem(parsed) === null ? parsed : storableJson(parsed);
  } catch (e) {
    // nesting too deep to walk (a RangeError): still never a tool failure the model could retry
    throw new EffectNotRecorded(
      `the side effect '${what}' ran but its result cannot be stored: ${(e as Error)?.message ?? e}`,
      { cause: e },
    );
  }
  const problem = jsonProblem(value);
  if (problem) throw new EffectNotRecorded(`the side effect '${what}' ran but its result cannot be stored: ${problem}`);
  return value;
}

/**
 * A store failure inside a tool is not a tool result: if the model were told
 * "the tool failed" it could call it again and repeat the side effect. It
 * escapes the run instead (see Agent.invoke), which stays resumable.
 */
function storeFailed(message: string, cause: unknown): WaymarkError {
  return new WaymarkError(ErrorCode.STORE_FAILED, `${message}: ${(cause as Error)?.message ?? cause}`, { cause });
}
