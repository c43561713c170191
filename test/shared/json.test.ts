/**
 * stableStringify is the text idempotency keys and payload hashes are made of:
 * it must never change for a JSON value, or a run resumed after an upgrade
 * would miss its cache and repeat a side effect.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze, setOwn, stableStringify } from '../../shared/json.js';

/** The first definition (0.1.0): a copy with keys inserted in sorted order, then JSON.stringify. */
function reference(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map(sortKeys);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) setOwn(out, k, sortKeys(x));
    }
    return out;
  };
  return JSON.stringify(sortKeys(value));
}

// keys JavaScript enumerates specially (array indices, near the 2^32 boundary) or that are prototype-ish
const awkwardKey = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '0',
    '1',
    '9',
    '10',
    '01',
    '-1',
    '1.5',
    '4294967294',
    '4294967295',
    '4294967296',
    '__proto__',
    'constructor',
    '',
  ),
  fc.nat().map(String),
);
const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.array(fc.tuple(awkwardKey, tie('v')), { maxLength: 6 }).map((entries) => {
      const o: Record<string, unknown> = {};
      for (const [k, x] of entries) setOwn(o, k, x);
      return o;
    }),
  ),
})).v;

describe('stableStringify', () => {
  it('writes exactly the text of the first definition for any JSON value', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(stableStringify(v)).toBe(reference(v));
      }),
      { numRuns: 3000 },
    );
  });

  it('is the same text whatever the key order, and array-index keys come first, numerically', () => {
    expect(stableStringify({ b: 1, a: [{ z: 1, y: 2 }], 10: 'x', 9: 'y' })).toBe(
      '{"9":"y","10":"x","a":[{"y":2,"z":1}],"b":1}',
    );
    expect(stableStringify(JSON.parse('{"__proto__":{"b":1,"a":2},"x":null}'))).toBe(
      '{"__proto__":{"a":2,"b":1},"x":null}',
    );
    expect(stableStringify({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
  });
});

describe('deepFreeze', () => {
  /** Every object reachable through own enumerable string keys (what the first definition, over Object.keys, froze). */
  const reachable = (v: unknown, out: object[] = []): object[] => {
    if (v === null || typeof v !== 'object') return out;
    out.push(v);
    for (const k of Object.keys(v)) reachable((v as Record<string, unknown>)[k], out);
    return out;
  };

  it('freezes every object and array of any JSON value, `__proto__` and index keys included, and returns the value itself', () => {
    fc.assert(
      fc.property(value, (v) => {
        const copy = JSON.parse(JSON.stringify(v) ?? 'null') as unknown;
        expect(deepFreeze(copy)).toBe(copy);
        for (const o of reachable(copy)) expect(Object.isFrozen(o)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('freezes inside an object already reached once, a null-prototype object, and leaves inherited values alone', () => {
    const shared = { n: { deep: [1, { x: 2 }] } };
    const proto = { inherited: { mine: false } };
    const child = Object.assign(Object.create(proto) as Record<string, unknown>, { own: { a: 1 } });
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { k: [{ z: 1 }] });
    deepFreeze({ a: shared, b: shared, child, bare });
    for (const o of [...reachable(shared), ...reachable(child), ...reachable(bare)])
      expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(proto.inherited)).toBe(false);
    expect(deepFreeze('text')).toBe('text');
    expect(deepFreeze(null)).toBe(null);
  });
});
