/** How the CLI prints: aligned tables and local times. */
import { printable } from './terminal.js';

/** Aligned columns; each cell escaped first (support/terminal.ts), so a line break or control character in an id or a message neither acts on the terminal nor fakes a row, and the columns stay aligned. */
export function table(cells: string[][], out: (line: string) => void): void {
  const rows = cells.map((r) => r.map(printable));
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows)
    out(
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    );
}

/** An ISO time as local wall-clock time with its UTC offset ("2026-03-01 14:05:09 +01:00"). */
export function localTime(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, '0');
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())} ${sign}${p(Math.floor(Math.abs(off) / 60))}:${p(Math.abs(off) % 60)}`;
}
