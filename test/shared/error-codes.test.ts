/**
 * The registry (`ErrorCode` in shared/errors.ts) is the only way to name an
 * error. `WaymarkError.code` is typed by it; this test covers what the type
 * cannot see: a code written as a string in the source (an HTTP answer, a
 * plane error class, a comparison with a code read from the wire). A new free
 * string fails here until it is registered with what it means. A refusal's
 * HTTP status (shared/refusals.ts, one table for the plane and the
 * inspector's pages) is the one its registry entry names.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ErrorCode, hasCode, isErrorCode, WaymarkError } from '../../shared/errors.js';
import { isRefusalCode, REFUSAL_STATUS } from '../../shared/refusals.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Codes of other systems that the source compares against; never waymark's own. */
const FOREIGN: Record<string, string> = {
  ERR_MODULE_NOT_FOUND: 'Node: an optional peer dependency is not installed',
  MODULE_NOT_FOUND: 'Node: an optional peer dependency loaded with `require` (better-sqlite3) is not installed',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'better-sqlite3: a duplicate primary key',
  EPERM: 'Node errno: a process we may not signal (alive, another user)',
  ENOENT: 'Node errno: no such file',
  EEXIST: 'Node errno: the file exists (an exclusive create lost a race)',
  EADDRINUSE: 'Node errno: the port is taken (`waymark ui --port` says so)',
  ECONNRESET:
    'Node errno: the peer reset the connection (a kept-alive socket the plane closed: the change feed sends its GET again)',
  EPIPE: 'Node errno: a write on a socket the peer closed (as ECONNRESET)',
  UND_ERR_SOCKET:
    'undici: the connection closed before any answer arrived (a kept-alive socket the plane closed: a lease renewal is sent again)',
};

/** Where a string is an error code: after `code`, or as an argument of an error constructor or an error answer. */
const PATTERNS = [
  /\bcode\s*(?:[:=]|===|!==)\s*'([A-Z][A-Z0-9_]*)'/g,
  /\b(?:\w*Error|\w*Exception|super|errorJson|refuse|hasCode|expectCode)\s*\([^'()]*?'([A-Z][A-Z0-9_]*)'/g,
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return sources(p);
    return /\.tsx?$/.test(d.name) && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Every code-position string of the library's source, with where it is. */
function codesInSource(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of ['client', 'plane', 'shared', 'support', 'inspector'].flatMap((d) => sources(join(root, d)))) {
    const text = readFileSync(file, 'utf8');
    for (const re of PATTERNS) {
      for (const m of text.matchAll(re)) {
        const at = `${relative(root, file)}:${text.slice(0, m.index).split('\n').length}`;
        found.set(m[1], [...(found.get(m[1]) ?? []), at]);
      }
    }
  }
  return found;
}

describe('the error registry', () => {
  it('every code written in the source is registered (or is a named code of another system)', () => {
    const found = codesInSource();
    // the scan sees the codes it is meant to see (an HTTP answer, an error class, a wire comparison)
    expect([...found.keys()]).toEqual(expect.arrayContaining(['ALREADY_CLAIMED', 'STORE_CLOSED', 'RUN_IN_PROGRESS']));
    const unregistered = [...found]
      .filter(([code]) => !isErrorCode(code) && !(code in FOREIGN))
      .map(([code, at]) => `${code} (${at.join(', ')})`);
    expect(unregistered, 'register each in shared/errors.ts with what it means').toEqual([]);
  });

  it('no foreign code is a waymark code', () => {
    expect(Object.keys(FOREIGN).filter((c) => isErrorCode(c))).toEqual([]);
  });

  it('each code is its own name, once', () => {
    for (const [k, v] of Object.entries(ErrorCode)) expect(v).toBe(k);
    expect(new Set(Object.values(ErrorCode)).size).toBe(Object.keys(ErrorCode).length);
  });

  it('isErrorCode knows registered codes only', () => {
    expect(isErrorCode('TOOL_NOT_FOUND')).toBe(true);
    expect(isErrorCode('NOT_A_CODE')).toBe(false);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode(42)).toBe(false);
  });

  it('a WaymarkError carries its registered code across a process (classified by code, not class)', () => {
    const e = new WaymarkError(ErrorCode.TOOL_NOT_FOUND, 'no tool', { details: { tool: 'x' } });
    const crossed = JSON.parse(JSON.stringify({ code: e.code, message: e.message }));
    expect(hasCode(crossed, ErrorCode.TOOL_NOT_FOUND)).toBe(true);
  });

  it("each refusal's HTTP status (shared/refusals.ts) is the one its registry entry names, and no other", () => {
    const text = readFileSync(join(root, 'shared', 'errors.ts'), 'utf8');
    // each code's doc comment, as the registry writes it: `/** … */` right before `CODE: 'CODE',`
    const docs = new Map(
      [...text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*([A-Z][A-Z0-9_]*): '\2',/g)].map((m) => [m[2], m[1]]),
    );
    expect(docs.size).toBeGreaterThan(50);
    const named = Object.entries(REFUSAL_STATUS).map(([code, status]) => [
      code,
      status,
      [...new Set((docs.get(code) ?? '').match(/\b[1-5]\d\d\b/g))].map(Number),
    ]);
    expect(named).toEqual(Object.entries(REFUSAL_STATUS).map(([code, status]) => [code, status, [status]]));
    expect(Object.keys(REFUSAL_STATUS).filter((c) => !isErrorCode(c))).toEqual([]);
    expect([isRefusalCode('PAUSE_CLOSED'), isRefusalCode('INTERNAL'), isRefusalCode('toString')]).toEqual([
      true,
      false,
      false,
    ]);
  });
});
