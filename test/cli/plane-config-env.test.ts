/**
 * The plane's settings from the environment (plane/config.ts): a bad value is
 * refused with INVALID_OPTIONS saying, for each bad setting at once, what is
 * wanted and what was given; nothing is started or created. Run through the
 * real binary.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseUrlProblem, loadConfig } from '../../plane/config.js';
import { waymarkAsync } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-plane-config-');
afterAll(() => tmp.cleanup());

/** The problems a refused environment is named by (loadConfig throws before anything is opened). */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toMatchObject({ code: 'INVALID_OPTIONS' });
    return (e as { details: { problems: string[] } }).details.problems;
  }
  throw new Error(`accepted: ${JSON.stringify(env)}`);
}

describe('plane configuration from the environment', () => {
  it('WAYMARK_PORT=abc says what is wanted and what it got, with INVALID_OPTIONS; every bad setting in the one message; no data dir made', async () => {
    const dir = tmp.file('never-made');
    const one = await waymarkAsync(['plane', '--data-dir', dir], { env: { WAYMARK_PORT: 'abc' } });
    expect([one.code, one.stderr.trim()]).toEqual([
      1,
      'waymark: INVALID_OPTIONS: invalid plane configuration: WAYMARK_PORT: must be an integer, from 0 to 65535 (got "abc")',
    ]);
    expect(one.stdout).toBe('');

    const two = await waymarkAsync(['plane', '--data-dir', dir], {
      env: { WAYMARK_PORT: 'abc', WAYMARK_MAX_INFLIGHT_INGEST: '-3' },
    });
    expect(two.code).toBe(1);
    expect(two.stderr.trim()).toBe(
      'waymark: INVALID_OPTIONS: invalid plane configuration: WAYMARK_PORT: must be an integer, from 0 to 65535 (got "abc"); WAYMARK_MAX_INFLIGHT_INGEST: must be an integer, at least 1 (got "-3")',
    );
    // the admin commands read the same settings
    const keys = await waymarkAsync(['plane', 'keys', 'list', '--data-dir', dir], {
      env: { WAYMARK_LOG_LEVEL: 'loud' },
    });
    expect([keys.code, keys.stderr.trim()]).toEqual([
      1,
      `waymark: INVALID_OPTIONS: invalid plane configuration: WAYMARK_LOG_LEVEL: must be 'fatal', 'error', 'warn', 'info', 'debug', 'trace' or 'silent' (got "loud")`,
    ]);
    expect(existsSync(dir)).toBe(false);
  });

  it('a flag replaces its variable, which is then not read; a bad flag and bad variables are named together (USAGE, exit 2)', async () => {
    expect(loadConfig({ WAYMARK_PORT: 'abc', WAYMARK_HOST: '' }, { port: 0, host: '127.0.0.1' })).toMatchObject({
      port: 0,
      host: '127.0.0.1',
    });
    expect(problemsOf({ WAYMARK_PORT: 'abc', WAYMARK_HOST: '' })).toEqual([
      'WAYMARK_HOST: must not be empty',
      'WAYMARK_PORT: must be an integer, from 0 to 65535 (got "abc")',
    ]);

    const dir = tmp.file('never-made-2');
    const both = await waymarkAsync(['plane', '--port', '99999', '--data-dir', dir], {
      env: { WAYMARK_LOG_LEVEL: 'loud', WAYMARK_PORT: 'abc' },
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(
      /^waymark plane: USAGE: 2 problems:\n {2}- option '--port': must be an integer, from 0 to 65535 \(got "99999"\)\n {2}- WAYMARK_LOG_LEVEL: must be 'fatal', 'error', 'warn', 'info', 'debug', 'trace' or 'silent' \(got "loud"\)\n/,
    );
    // --port replaces WAYMARK_PORT: its bad value is not a problem of this command line
    expect(both.stderr).not.toMatch(/WAYMARK_PORT: must be/);
    // an empty flag is refused, and then its variable is read (and named too)
    const empty = await waymarkAsync(['plane', '--host', '', '--port', '99999', '--data-dir', dir], {
      env: { WAYMARK_HOST: '' },
    });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(
      /^waymark plane: USAGE: 3 problems:\n {2}- option '--host' needs a value\n {2}- option '--port': must be an integer, from 0 to 65535 \(got "99999"\)\n {2}- WAYMARK_HOST: must not be empty\n/,
    );
    expect(existsSync(dir)).toBe(false);
    // a good --data-dir over an empty WAYMARK_PLANE_DIR: the command goes on
    const keys = await waymarkAsync(['plane', 'keys', 'list', '--data-dir', dir], { env: { WAYMARK_PLANE_DIR: '' } });
    expect([keys.code, keys.stderr, keys.stdout.trim()]).toEqual([0, '', 'no keys']);
  });

  it('each setting refuses an empty value, a negative one, a fraction and text the same way', () => {
    expect(problemsOf({ WAYMARK_PORT: '' })).toEqual(['WAYMARK_PORT: must be an integer, from 0 to 65535 (got "")']);
    expect(problemsOf({ WAYMARK_PORT: '-1' })).toEqual([
      'WAYMARK_PORT: must be an integer, from 0 to 65535 (got "-1")',
    ]);
    expect(problemsOf({ WAYMARK_PORT: '80.5' })).toEqual([
      'WAYMARK_PORT: must be an integer, from 0 to 65535 (got "80.5")',
    ]);
    expect(problemsOf({ WAYMARK_PORT: '65536' })).toEqual([
      'WAYMARK_PORT: must be an integer, from 0 to 65535 (got "65536")',
    ]);
    expect(problemsOf({ WAYMARK_METRICS_PORT: 'nine' })).toEqual([
      'WAYMARK_METRICS_PORT: must be an integer, from 0 to 65535 (got "nine")',
    ]);
    const durations = [
      'WAYMARK_INGEST_QUEUE_WAIT_MS',
      'WAYMARK_BODY_IDLE_MS',
      'WAYMARK_BODY_TOTAL_MS',
      'WAYMARK_HEADERS_TIMEOUT_MS',
      'WAYMARK_RETENTION_INTERVAL_MS',
      'WAYMARK_TAKEOVER_AFTER_MS',
    ];
    // past 2^31 - 1 ms Node's timers fire at once: a retention interval of 3e9 ms ran a pass every millisecond
    for (const [names, wanted, refused] of [
      [['WAYMARK_MAX_INFLIGHT_INGEST'], 'an integer, at least 1', ['', '0', '-5', '1.5', 'ten', '1e3']],
      [['WAYMARK_MAX_QUEUED_INGEST'], 'an integer, at least 0', ['', '-1', '2.5', 'x']],
      [
        durations,
        'an integer number of ms, from 1 to 2147483647',
        ['', '0', '-5', '1.5', 'ten', '1e3', '2147483648', '3000000000'],
      ],
      [
        ['WAYMARK_CLAIM_RELEASE_AFTER_MS'],
        'an integer number of ms, from 0 to 2147483647',
        ['', '-1', '2.5', 'x', '3000000000'],
      ],
    ] as const) {
      for (const name of names)
        for (const v of refused)
          expect(problemsOf({ [name]: v }), `${name}=${v}`).toEqual([`${name}: must be ${wanted} (got "${v}")`]);
    }
    for (const v of ['', '0', '-2', 'a week'])
      expect(problemsOf({ WAYMARK_RETENTION_DAYS: v })).toEqual([
        `WAYMARK_RETENTION_DAYS: must be a positive number of days (got "${v}")`,
      ]);
    expect(problemsOf({ WAYMARK_DEV: 'yes' })).toEqual([
      `WAYMARK_DEV: must be '0', '1', 'true' or 'false' (got "yes")`,
    ]);
    for (const name of ['WAYMARK_PLANE_DIR', 'WAYMARK_HOST', 'WAYMARK_METRICS_HOST'])
      expect(problemsOf({ [name]: '' })).toEqual([`${name}: must not be empty`]);
    // a database URL may hold a password: it is never echoed
    const url = problemsOf({ WAYMARK_DATABASE_URL: 'secret-password@nowhere' });
    expect(url).toEqual([
      'WAYMARK_DATABASE_URL: must be a postgres:// or postgresql:// URL such as postgres://user:password@host:5432/db (the value is not shown: it may hold a password)',
    ]);
    // checked by its scheme: several hosts, which postgres.js takes and a URL parser refuses, pass (flag and variable)
    expect(loadConfig({ WAYMARK_DATABASE_URL: 'postgres://u@h1:5432,h2:5432/db' }).databaseUrl).toBe(
      'postgres://u@h1:5432,h2:5432/db',
    );
    expect(databaseUrlProblem('postgres://u@h1:5432,h2:5432/db')).toBeNull();
    expect(databaseUrlProblem('mysql://x')).toMatch(/^option '--database-url' must be a postgres:\/\//);
    // a control character in a value is shown escaped, never raw
    expect(problemsOf({ WAYMARK_PORT: '1\x1b[2J' })).toEqual([
      'WAYMARK_PORT: must be an integer, from 0 to 65535 (got "1\\u001b[2J")',
    ]);
    // all at once
    expect(problemsOf({ WAYMARK_PORT: 'abc', WAYMARK_BODY_IDLE_MS: '0', WAYMARK_DEV: 'on' })).toHaveLength(3);
  });

  it('good values are read as before', () => {
    expect(
      loadConfig({
        WAYMARK_PORT: '0',
        WAYMARK_METRICS_PORT: '9464',
        WAYMARK_MAX_QUEUED_INGEST: '0',
        WAYMARK_CLAIM_RELEASE_AFTER_MS: '0',
        WAYMARK_RETENTION_DAYS: '0.5',
        WAYMARK_TAKEOVER_AFTER_MS: '1',
        WAYMARK_RETENTION_INTERVAL_MS: '2147483647',
        WAYMARK_DEV: 'true',
        WAYMARK_DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
      }),
    ).toMatchObject({
      port: 0,
      metricsPort: 9464,
      maxQueuedIngest: 0,
      claimReleaseAfterMs: 0,
      retentionDays: 0.5,
      takeoverAfterMs: 1,
      retentionIntervalMs: 2147483647,
      dev: true,
      databaseUrl: 'postgres://u:p@127.0.0.1:5432/db',
    });
    expect(loadConfig({})).toMatchObject({
      port: 4600,
      host: '127.0.0.1',
      dataDir: '.waymark/plane',
      maxInflightIngest: 16,
      logLevel: 'info',
      dev: false,
    });
  });
});
