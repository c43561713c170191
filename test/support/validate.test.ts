/**
 * The validation kit (support/validate.ts) words each kind of problem one
 * way, and every INVALID_OPTIONS the library throws is made by it: a refusal
 * reads the same from every entry point.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { CONTROL_CHARACTER, readableNameProblems, terminalControls, textLength } from '../../shared/text.js';
import {
  apiKeyProblem,
  booleanProblem,
  durationProblem,
  functionProblem,
  integerProblem,
  integerTextProblem,
  objectProblem,
  oneOfProblem,
  optionNames,
  optionsProblems,
  portTextProblem,
  readableNameProblem,
  refuse,
  stringProblem,
  unknownOptions,
  urlProblem,
} from '../../support/validate.js';

const ROOT = join(import.meta.dirname, '../..');

describe('each kind of problem has one phrasing', () => {
  it('integers given as text (flags, environment variables): digits only, in the phrasing of integers', () => {
    expect(integerTextProblem("option '--limit'", '0', 1)).toBe(
      `option '--limit': must be an integer, at least 1 (got "0")`,
    );
    for (const typo of ['1e3', ' 16', '-1', '1.5', ''])
      expect(integerTextProblem('WAYMARK_X', typo, 0)).toBe(
        `WAYMARK_X: must be an integer, at least 0 (got ${JSON.stringify(typo)})`,
      );
    expect(integerTextProblem('WAYMARK_X_MS', '0', 1, 10, 'ms')).toBe(
      'WAYMARK_X_MS: must be an integer number of ms, from 1 to 10 (got "0")',
    );
    expect(integerTextProblem('x', undefined, 1)).toBeNull();
    expect(integerTextProblem('x', '16', 1)).toBeNull();
    expect(portTextProblem("option '--port'", '65536')).toBe(
      `option '--port': must be an integer, from 0 to 65535 (got "65536")`,
    );
    expect(portTextProblem("option '--port'", '0')).toBeNull();
  });

  it('integers: a range, a lower bound, an upper bound, a unit', () => {
    expect(integerProblem('limit', 0, 1)).toBe('limit: must be an integer, at least 1 (got 0)');
    expect(integerProblem('limit', 1.5, 1, 10)).toBe('limit: must be an integer, from 1 to 10 (got 1.5)');
    expect(integerProblem('afterSeq', 'x', Number.MIN_SAFE_INTEGER)).toBe('afterSeq: must be an integer (got "x")');
    expect(integerProblem('batchBytes', -1, 1, Number.MAX_SAFE_INTEGER, 'bytes')).toBe(
      'batchBytes: must be an integer number of bytes, at least 1 (got -1)',
    );
    expect(integerProblem('limit', undefined, 1)).toBeNull();
    expect(integerProblem('limit', 5, 1, 10)).toBeNull();
  });

  it('durations are integers of ms', () => {
    expect(durationProblem('pollMs', 0, 1)).toBe('pollMs: must be an integer number of ms, at least 1 (got 0)');
    expect(durationProblem('debounceMs', Number.NaN, 0, 100)).toBe(
      'debounceMs: must be an integer number of ms, from 0 to 100 (got NaN)',
    );
    expect(durationProblem('pollMs', 10, 1)).toBeNull();
  });

  it('enumerations, booleans, strings, functions and objects', () => {
    expect(oneOfProblem('order', 'up', ['asc', 'desc'])).toBe("order: must be 'asc' or 'desc' (got \"up\")");
    expect(oneOfProblem('state', 1, ['pending', 'applied', 'superseded'])).toBe(
      "state: must be 'pending', 'applied' or 'superseded' (got 1)",
    );
    expect(booleanProblem('withoutPlane', 'yes')).toBe('withoutPlane: must be true or false (got "yes")');
    expect(stringProblem('checkpointId', 42)).toBe('checkpointId: must be a string (got 42)');
    expect(functionProblem('onEvent', {})).toBe('onEvent: must be a function (got object)');
    expect(objectProblem('options', 'order-42')).toBe('options: must be an object (got "order-42")');
    for (const check of [oneOfProblem, booleanProblem, stringProblem, functionProblem, objectProblem])
      expect(check('x', undefined, [])).toBeNull();
  });

  it('URLs and API keys: described, never quoted (they may hold a secret)', () => {
    expect(urlProblem('ftp://h/x')).toBe("url: must be the plane's http or https URL (got a 'ftp:' URL)");
    expect(urlProblem('http://u:secret@h')).toBe(
      'url: must not carry credentials (user:password@), the key goes in apiKey',
    );
    expect(urlProblem('http://127.0.0.1:4600')).toBeNull();
    expect(apiKeyProblem('wm_a b')).toBe('apiKey: must not contain whitespace or control characters');
    expect(apiKeyProblem('wm_a\u007f')).toBe('apiKey: must not contain whitespace or control characters');
    expect(apiKeyProblem(7)).toBe("apiKey: must be the plane's API key, a string (got 7)");
  });

  it('unknown option names, with the near name, and values of the wrong type', () => {
    const known = optionNames<{ maxTurns?: number; watch?: boolean }>({ maxTurns: true, watch: booleanProblem });
    expect(unknownOptions({ maxTurn: 3 }, known)).toEqual(["unknown option 'maxTurn' (did you mean 'maxTurns'?)"]);
    expect(optionsProblems({ maxTurn: 3, watch: 1 }, known)).toEqual([
      "unknown option 'maxTurn' (did you mean 'maxTurns'?)",
      'watch: must be true or false (got 1)',
    ]);
    expect(optionsProblems({ watch: undefined }, known)).toEqual([]);
  });

  it('readable names: not blank, at most max code points, nothing a terminal acts on, no half a character', () => {
    expect(readableNameProblem('name', ' ', 8)).toBe('name: " " is blank');
    expect(readableNameProblem('name', '', 8)).toBe('name: "" is empty');
    // code points, not UTF-16 units: eight emoji are eight characters
    expect(readableNameProblem('name', '😀'.repeat(8), 8)).toBeNull();
    expect(readableNameProblem('name', '😀'.repeat(9), 8)).toBe(
      `name: "${'😀'.repeat(9)}" is 9 characters long, more than 8`,
    );
    expect(readableNameProblem('name', 'a\u202eb\u0085', 8)).toBe(
      'name: "a\\u202eb\\u0085" holds characters a terminal acts on ("\\u202e", "\\u0085")',
    );
    expect(readableNameProblem('name', 'a\ud800', 8)).toBe(
      'name: "a\\ud800" holds half a character (a lone surrogate)',
    );
    expect(readableNameProblem('name', 3, 8)).toBe('name: must be a string (got 3)');
    expect(readableNameProblems('Refund Bot', 64)).toEqual([]);
  });

  it('one control character: C0 or DEL; a terminal acts on those, on C1 controls and on reordering marks', () => {
    for (const c of ['\u0000', '\u001b', '\u007f']) expect(CONTROL_CHARACTER.test(c)).toBe(true);
    for (const c of ['\u0085', '\u202e', '\u2028', 'a', ' ']) expect(CONTROL_CHARACTER.test(c)).toBe(false);
    expect(terminalControls('a\u202e\u001bb\u202e\u0085')).toEqual(['\u202e', '\u001b', '\u0085']);
    expect(textLength('a😀')).toBe(2);
  });

  it('refuse: INVALID_OPTIONS naming every problem, with what was left as it was; nothing when there is none', () => {
    expect(() => refuse('list', [])).not.toThrow();
    let caught: unknown;
    try {
      refuse('list', ['limit: must be an integer, at least 1 (got 0)', 'order: bad'], 'nothing was read');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(WaymarkError);
    expect(caught).toMatchObject({
      code: ErrorCode.INVALID_OPTIONS,
      message: 'list: limit: must be an integer, at least 1 (got 0); order: bad; nothing was read',
      details: { problems: ['limit: must be an integer, at least 1 (got 0)', 'order: bad'] },
    });
  });
});

/** Every TypeScript source of the library (tests and generated files aside). */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('every INVALID_OPTIONS comes from the kit', () => {
  it('no source but support/validate.ts makes an INVALID_OPTIONS error; others only read the code', () => {
    const kit = 'support/validate.ts';
    const offenders: string[] = [];
    let scanned = 0;
    for (const dir of ['client', 'plane', 'shared', 'support', 'inspector', 'bin']) {
      for (const file of sources(join(ROOT, dir))) {
        scanned++;
        const rel = relative(ROOT, file);
        if (rel === kit || rel.startsWith('client/testing/')) continue;
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/ErrorCode\.INVALID_OPTIONS|['"`]INVALID_OPTIONS['"`]/g)) {
          const before = text.slice(Math.max(0, m.index - 40), m.index);
          // reading a code (hasCode(e, ErrorCode.INVALID_OPTIONS)) is no refusal; the registry defines it
          if (/hasCode\([^)]*$/.test(before)) continue;
          // a code listed in a set of codes a caller compares against (`REFUSED.has(code)`) is read too
          const set = text.lastIndexOf('new Set([', m.index);
          if (set >= 0 && !text.slice(set, m.index).includes('])')) continue;
          if (rel === 'shared/errors.ts' && /INVALID_OPTIONS: $/.test(before)) continue;
          offenders.push(`${rel}: …${before.trim()}${m[0]}`);
        }
      }
    }
    expect(scanned).toBeGreaterThan(150);
    expect(offenders).toEqual([]);
  });

  it('InvalidOptions is made outside the kit only for a data dir or admin-key file the plane cannot use', () => {
    // Those refusals are about the machine, not a caller's option: one sentence naming the path, the
    // system's error and the way out, which no problem builder words. Any other refusal goes through refuse().
    const allowed: Record<string, number> = { 'plane/server.ts': 2, 'plane/db/open.ts': 1 };
    const made: Record<string, number> = {};
    let scanned = 0;
    for (const dir of ['client', 'plane', 'shared', 'support', 'inspector', 'bin'])
      for (const file of sources(join(ROOT, dir))) {
        scanned++;
        const rel = relative(ROOT, file);
        if (rel === 'support/validate.ts') continue;
        const n = readFileSync(file, 'utf8').match(/new InvalidOptions\(/g)?.length ?? 0;
        if (n) made[rel] = n;
      }
    expect(scanned).toBeGreaterThan(150);
    expect(made).toEqual(allowed);
  });
});
