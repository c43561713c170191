/** `isoTime` against `Date#toISOString`: the same text for every millisecond it formats, the Date's own answer outside. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isoTime } from '../../support/time.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('isoTime', () => {
  it('matches Date#toISOString at the edges: the epoch, leap days, century rules, the ends of years 0000 and 9999', () => {
    const edges = [
      0,
      -1,
      1,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(1900, 1, 28, 12),
      Date.UTC(1900, 2, 1),
      Date.UTC(2100, 1, 28, 23, 59, 59, 999),
      Date.UTC(2100, 2, 1),
      Date.UTC(2024, 11, 31, 23, 59, 59, 999),
      Date.UTC(2025, 0, 1),
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(1600, 1, 29),
      -62_167_219_200_000,
      -62_167_219_200_001,
      253_402_300_799_999,
      253_402_300_800_000,
      8.64e15,
      -8.64e15,
    ];
    for (const ms of edges) expect(isoTime(ms), String(ms)).toBe(iso(ms));
  });

  it('matches Date#toISOString for any millisecond of years 0000–9999, and for now', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => isoTime(ms) === iso(ms)),
      { numRuns: 20_000 },
    );
    const now = Date.now();
    expect(isoTime(now)).toBe(iso(now));
  });

  it('leaves what it does not format to the Date: a fraction of a millisecond, a six-digit year, an invalid time', () => {
    expect(isoTime(1.5)).toBe(iso(1.5));
    expect(isoTime(8.64e15)).toBe('+275760-09-13T00:00:00.000Z');
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});
