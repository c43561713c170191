import { LIMITS } from './limits.js';

/** A JSON value: what every stored and transmitted payload must be. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Why `value` is not plain JSON (null when it is). Rejects non-finite numbers,
 * undefined, functions, symbols, bigints, class instances (Date, Map…),
 * cycles and nesting deeper than `maxDepth`.
 */
export function jsonProblem(value: unknown, maxDepth: number = LIMITS.jsonDepth): string | null {
  // the path is kept as segments and spelled out only for a problem: a valid value builds no strings
  const ancestors: object[] = [];
  const at: (string | number)[] = [];
  const where = () => {
    let p = '$';
    for (const s of at) p += typeof s === 'number' ? `[${s}]` : `.${s}`;
    return p;
  };
  const walk = (v: unknown, depth: number): string | null => {
    if (v === null) return null;
    switch (typeof v) {
      case 'string':
        return isStorable(v) ? null : textProblem(v, where());
      case 'boolean':
        return null;
      case 'number':
        return Number.isFinite(v) ? null : `${where()}: ${v} is not a finite number`;
      case 'object':
        break;
      default:
        return `${where()}: a ${typeof v} is not JSON`;
    }
    if (depth >= maxDepth) return `${where()}: nested deeper than ${maxDepth}`;
    const o = v as object;
    // only the ancestors (at most maxDepth of them): a value seen twice side by side is no cycle
    if (ancestors.includes(o)) return `${where()}: circular reference`;
    ancestors.push(o);
    try {
      if (Array.isArray(o)) {
        for (let i = 0; i < o.length; i++) {
          at.push(i);
          const p = walk(o[i], depth + 1);
          if (p) return p;
          at.pop();
        }
        return null;
      }
      const proto = Object.getPrototypeOf(o);
      if (proto !== Object.prototype && proto !== null) {
        return `${where()}: a ${o.constructor?.name ?? 'class'} instance is not plain JSON`;
      }
      for (const k of Object.keys(o)) {
        if (!isStorable(k)) return textProblem(k, `${where()} (key)`);
        at.push(k);
        const p = walk((o as Record<string, unknown>)[k], depth + 1);
        if (p) return p;
        at.pop();
      }
      return null;
    } finally {
      ancestors.pop();
    }
  };
  return walk(value, 0);
}

/** What `textProblem` accepts, without building its message. */
const isStorable = (s: string) => textFault(s) === null;

/**
 * Text every backend can store: well-formed Unicode (no lone surrogates) and no
 * U+0000. Postgres jsonb and text refuse both, so a row carrying either would
 * be stored locally and then refused by the plane forever.
 */
export function textProblem(s: string, path = '$'): string | null {
  const fault = textFault(s);
  return fault && `${path}: ${fault}`;
}

/** What `textProblem` says of a string, without its path (null: every backend can store it). */
export function textFault(s: string): string | null {
  if (!s.isWellFormed()) return 'a string holds a lone surrogate (not well-formed Unicode)';
  if (s.includes('\u0000')) return 'a string holds U+0000';
  return null;
}

/** Replace what `textProblem` refuses with U+FFFD, for text the runtime does not control (model and tool output). */
export function storableText(s: string): string {
  return isStorable(s) ? s : s.toWellFormed().replace(/\u0000/g, '\uFFFD');
}

/**
 * A copy of `value` (plain JSON) with every string and key passed through
 * `storableText` (a string alone is returned as that). A key that becomes
 * another key present keeps the later value, as `JSON.parse` does with a
 * repeated key.
 */
export function storableJson(value: Json): Json {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(storableJson);
  const out: Record<string, Json> = {};
  for (const k of Object.keys(value)) setOwn(out, storableText(k), storableJson(value[k]));
  return out;
}

/**
 * JSON with object keys sorted at every level: the same value always gives
 * the same text. Used for idempotency keys and payload comparison.
 */
export function stableStringify(value: unknown): string {
  return write(value) as string;
}

/** Canonical array-index keys, which JavaScript objects enumerate first, in numeric order. */
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;
const isIndexKey = (k: string) => INDEX_KEY.test(k) && Number(k) < 4294967295;

/**
 * Written directly, without building a sorted copy. The text is exactly what
 * `JSON.stringify` gives for a copy with keys inserted in sorted order (which
 * idempotency keys stored by earlier versions depend on): such a copy still
 * enumerates array-index keys first, numerically, so this does too.
 */
function write(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + (write(v[i]) ?? 'null');
    return s + ']';
  }
  const keys = Object.keys(v).sort();
  let ordered = keys;
  if (keys.some(isIndexKey)) {
    const index = keys.filter(isIndexKey).sort((a, b) => Number(a) - Number(b));
    ordered = [...index, ...keys.filter((k) => !isIndexKey(k))];
  }
  let s = '{';
  for (const k of ordered) {
    const x = write((v as Record<string, unknown>)[k]);
    if (x === undefined) continue;
    s += (s.length > 1 ? ',' : '') + JSON.stringify(k) + ':' + x;
  }
  return s + '}';
}

/**
 * Set an own, enumerable property, even for keys such as `__proto__` that a
 * plain assignment would turn into a prototype change.
 */
export function setOwn<T>(o: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** UTF-8 byte length of a string. */
export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/**
 * The longest start of `s` whose size is at most `max`, cut between
 * characters (never inside a surrogate pair, which no backend stores): the
 * size is summed per character by `size`, UTF-16 units (what zod's `max`
 * counts) unless told, or `utf8Bytes` for a limit in bytes.
 */
export function startWithin(s: string, max: number, size: (ch: string) => number = (ch) => ch.length): string {
  let used = 0;
  let end = 0;
  for (const ch of s) {
    const n = size(ch);
    if (used + n > max) break;
    used += n;
    end += ch.length;
  }
  return s.slice(0, end);
}

/**
 * Deep-freeze a JSON value (dense arrays, no properties on arrays beyond
 * their elements) so nobody mutates a checkpointed message. Arrays by
 * index and objects by `for…in` over own keys, recursing only into objects: a
 * resume freezes every message of a run's history at once, and this is about
 * 3× the speed of recursing over `Object.keys` into every value (no key array
 * per object, no call per string), cold and warm.
 */
export function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  Object.freeze(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x === 'object' && x !== null) deepFreeze(x);
    }
  } else {
    const o = v as Record<string, unknown>;
    for (const k in o) {
      if (!Object.hasOwn(o, k)) continue;
      const x = o[k];
      if (typeof x === 'object' && x !== null) deepFreeze(x);
    }
  }
  return v;
}
