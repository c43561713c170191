/**
 * Incompressible message text for every bench, waymark and peer alike: a seeded
 * PRNG (mulberry32) drawn as base64 characters. Text of a repeated character
 * flatters any store that compresses (Postgres TOAST compressed LangGraph's
 * `'a'.repeat(200)` blobs 4.2×), so no bench uses it.
 *
 * Deterministic: the same (bytes, seed) gives the same text, so the two sides
 * of a comparison store byte-identical messages when they pass the same seeds.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Mix any number of integers into one 32-bit seed (so runs, turns and sides each get their own stream). */
export function seedOf(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A stateful source: each call returns the next `bytes` characters of the seed's stream. */
export function textSource(seed: number): (bytes: number) => string {
  let s = seed >>> 0;
  return (bytes: number) => {
    let out = '';
    while (out.length < bytes) {
      // mulberry32: 32 bits per draw, five 6-bit characters of them
      s = (s + 0x6d2b79f5) | 0;
      let t = Math.imul(s ^ (s >>> 15), 1 | s);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      t = (t ^ (t >>> 14)) >>> 0;
      for (let k = 0; k < 5 && out.length < bytes; k++, t >>>= 6) out += ALPHABET[t & 63];
    }
    return out;
  };
}

/** `bytes` characters of pseudo-random base64 text for one message, fixed by its seed parts. */
export function randomText(bytes: number, ...seed: number[]): string {
  return textSource(seedOf(...seed))(bytes);
}
