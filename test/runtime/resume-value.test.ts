/**
 * A resume answer given as a plain object skips the schema (plainResume, the
 * fresh-process resume cost): what the fast path accepts, ResumeValue
 * accepts, and the answer is the same, for values a caller could pass —
 * wrong types, unknown fields, class instances, null prototypes, lone
 * surrogates, NUL, non-finite numbers, deep nesting, `__proto__` keys.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainResume, Resume } from '../../client/runtime/interrupt.js';
import { InvalidResume } from '../../client/errors.js';
import { ResumeValue } from '../../shared/rows.js';

const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withSparseArray: true,
  withTypedArray: true,
  withObjectString: true,
  stringUnit: 'binary',
  maxDepth: 4,
});
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  anything,
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, undefined, '\u0000', '\ud800', 'a\udc00b'),
);
const metadata = fc.oneof(
  fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'toString')), value, { maxKeys: 5 }),
  anything,
  fc.constant(undefined),
);
const answer = fc.oneof(
  fc.record({ approved: fc.oneof(fc.boolean(), anything), metadata }, { requiredKeys: ['approved'] }),
  fc.record({ approved: fc.boolean(), metadata, extra: anything }, { requiredKeys: ['approved'] }),
  anything,
);

describe('a resume answer without the schema', () => {
  it('takes only what ResumeValue takes, and gives what it gives', () => {
    let fast = 0;
    fc.assert(
      fc.property(answer, (v) => {
        const plain = plainResume(v);
        if (plain === null) return;
        fast++;
        const r = ResumeValue.safeParse(v);
        expect(r.success).toBe(true);
        expect(plain).toStrictEqual(r.data);
      }),
      { numRuns: 3000 },
    );
    // the fast path was taken, so the comparison above ran
    expect(fast).toBeGreaterThan(100);
  });

  it('is taken for the answers a person or a screen gives', () => {
    expect(plainResume({ approved: true })).toStrictEqual({ approved: true, metadata: {} });
    expect(plainResume({ approved: false, metadata: { note: 'too large', by: ['ana'], n: 2 } })).toStrictEqual({
      approved: false,
      metadata: { note: 'too large', by: ['ana'], n: 2 },
    });
    expect(plainResume(JSON.parse('{"approved":true,"metadata":{"x":{"y":[1,null]}}}'))).not.toBeNull();
  });

  it('leaves a bad answer to the schema, which names every problem', () => {
    for (const bad of [
      { approved: 'yes' },
      { approved: true, note: 1 },
      { approved: true, metadata: { at: new Date(0) } },
      { approved: true, metadata: { n: Number.NaN } },
      { approved: true, metadata: JSON.parse('{"__proto__":1}') },
    ]) {
      expect(plainResume(bad)).toBeNull();
    }
    expect(() => new Resume({ approved: 'yes', note: 1 } as never)).toThrow(InvalidResume);
    try {
      new Resume({ approved: 'yes', note: 1 } as never);
    } catch (e) {
      expect((e as Error).message).toMatch(/approved/);
      expect((e as Error).message).toMatch(/unknown field 'note'/);
    }
  });

  it('leaves a `__proto__` key to the schema, which drops it', () => {
    const withProto = { approved: true, metadata: JSON.parse('{"__proto__":1,"note":"x"}') };
    expect(plainResume(withProto)).toBeNull();
    expect(new Resume(withProto).metadata).toStrictEqual(ResumeValue.parse(withProto).metadata);
  });

  it('copies the metadata: changing the caller\u2019s object later changes nothing', () => {
    const metadata: Record<string, string> = { note: 'ok' };
    const r = new Resume({ approved: true, metadata });
    metadata.note = 'changed';
    expect(r.metadata).toStrictEqual({ note: 'ok' });
  });
});
