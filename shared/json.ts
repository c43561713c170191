import { LIMITS } from './limits.js';

/** A JSON value: what every stored and transmitted payload must be. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Why `value` is not plain JSON (null when it is). Rejects non-finite numbers,
 * undefined, functions, symbols, bigints, class instances (Date, Map…),
 * cycles and nesting deeper than `maxDepth`.
 */
export function jsonProblem(value: unknown, maxDepth: number = LIMITS.jsonDepth): string | null {
  const seen = new Set<object>();
  const walk = (v: unknown, depth: number, path: string): string | null => {
    if (v === null) return null;
    switch (typeof v) {
      case 'string':
        return textProblem(v, path);
      case 'boolean':
        return null;
      case 'number':
        return Number.isFinite(v) ? null : `${path}: ${v} is not a finite number`;
      case 'object':
        break;
      default:
        return `${path}: a ${typeof v} is not JSON`;
    }
    if (depth >= maxDepth) return `${path}: nested deeper than ${maxDepth}`;
    const o = v as object;
    if (seen.has(o)) return `${path}: circular reference`;
    seen.add(o);
    try {
      if (Array.isArray(o)) {
        for (let i = 0; i < o.length; i++) {
          const p = walk(o[i], depth + 1, `${path}[${i}]`);
          if (p) return p;
        }
        return null;
      }
      const proto = Object.getPrototypeOf(o);
      if (proto !== Object.prototype && proto !== null) {
        return `${path}: a ${o.constructor?.name ?? 'class'} instance is not plain JSON`;
      }
      for (const k of Object.keys(o)) {
        const kp = textProblem(k, `${path} (key)`);
        if (kp) return kp;
        const p = walk((o as Record<string, unknown>)[k], depth + 1, `${path}.${k}`);
        if (p) return p;
      }
      return null;
    } finally {
      seen.delete(o);
    }
  };
  return walk(value, 0, '$');
}

/**
 * Text every backend can store: well-formed Unicode (no lone surrogates) and no
 * U+0000. Postgres jsonb and text refuse both, so a row carrying either would
 * be stored locally and then refused by the plane forever.
 */
export function textProblem(s: string, path = '$'): string | null {
  if (!s.isWellFormed()) return `${path}: a string holds a lone surrogate (not well-formed Unicode)`;
  if (s.includes('\u0000')) return `${path}: a string holds U+0000`;
  return null;
}

/** Replace what `textProblem` refuses with U+FFFD, for text the runtime does not control (model and tool output). */
export function storableText(s: string): string {
  return s.toWellFormed().replace(/\u0000/g, '\uFFFD');
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

/** Deep-freeze a JSON value so nobody mutates a checkpointed message. */
export function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v as object)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}
