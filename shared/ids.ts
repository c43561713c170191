import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let counter = 0;

/** Random bytes drawn 4 KiB at a time: one syscall per 256 ids instead of one per id. */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

/**
 * Mint a UUIDv7 (RFC 9562): 48-bit Unix ms, version 7, then a 12-bit
 * monotonic counter within the same millisecond and 62 random bits. Ids minted
 * by one process sort in creation order; ids from different writers are
 * globally unique by their random bits. Order of truth is still `seq`.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now <= lastMs) {
    counter++;
    if (counter > 0xfff) {
      lastMs++;
      counter = 0;
    }
    now = lastMs;
  } else {
    lastMs = now;
    counter = 0;
  }
  if (poolAt + 16 > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const b = Buffer.from(POOL.subarray(poolAt, (poolAt += 16)));
  b[0] = (now / 2 ** 40) & 0xff;
  b[1] = (now / 2 ** 32) & 0xff;
  b[2] = (now >>> 24) & 0xff;
  b[3] = (now >>> 16) & 0xff;
  b[4] = (now >>> 8) & 0xff;
  b[5] = now & 0xff;
  b[6] = 0x70 | ((counter >>> 8) & 0x0f);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const UUIDV7_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
