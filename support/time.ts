/**
 * Epoch milliseconds as ISO 8601 UTC text, byte-identical to
 * `Date#toISOString`, by arithmetic. Why not the Date: a process's first
 * `toISOString` initialises V8's date cache and ICU's time zone (0.7–1.0 ms
 * measured here), and a fresh process's resume call formatted its first time
 * inside the call (bench/PROFILES.md, 2026-12-05). Years outside 0000–9999,
 * and any invalid time, are left to the Date (its six-digit years, its
 * RangeError).
 */
const MIN = -62_167_219_200_000; // 0000-01-01T00:00:00.000Z
const MAX = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
const DAY = 86_400_000;

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

export function isoTime(ms: number): string {
  if (!Number.isInteger(ms) || ms < MIN || ms > MAX) return new Date(ms).toISOString();
  const days = Math.floor(ms / DAY);
  let rest = ms - days * DAY;
  // the civil date of a day count (H. Hinnant's days-to-civil, eras of 400 years from 0000-03-01)
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  const milli = rest - s * 1000;
  return `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(day)}T${pad2(h)}:${pad2(m)}:${pad2(s)}.${String(milli).padStart(3, '0')}Z`;
}
