/**
 * Every benchmark, at tiny sizes, so none of them can rot. Correctness only:
 * each must run to the end and print its JSON line; no timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pgReady } from './helpers/pg.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pg = await pgReady('benchmark smoke on postgres');

function bench(file: string, ...args: string[]): Record<string, unknown>[] {
  const r = spawnSync(process.execPath, ['--import', 'tsx', `bench/${file}`, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, WAYMARK_BENCH_SMOKE: '1' },
    timeout: 600_000,
  });
  expect(r.status, `${file}: ${r.stderr.slice(-800)}`).toBe(0);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('benchmark smoke runs', () => {
  it('steps: waymark (and the peer when installed) on SQLite', () => {
    const [line] = bench('steps.ts', 'steps', 'sqlite', '1');
    expect(line).toMatchObject({ bench: 'steps', backend: 'sqlite', R: 2, T: 3 });
    expect((line.ours as { median: number }).median).toBeGreaterThan(0);
    expect((line.oursCpu as { median: number }).median).toBeGreaterThan(0);
    expect((line.fsync as { median: number }).median).toBeGreaterThan(0);
  });
  it.skipIf(!pg)('steps on Postgres', () => {
    expect(bench('steps.ts', 'steps', 'postgres', '1')[0]).toMatchObject({ bench: 'steps', backend: 'postgres' });
  });
  it('concurrent: N runs at once on one store (and the peer on one saver when installed) beside the raw commit rate, SQLite', () => {
    const [line] = bench('concurrent.ts', 'sqlite');
    expect(line).toMatchObject({ bench: 'concurrent', backend: 'sqlite', runs: 4, T: 3 });
    for (const k of ['ours', 'oursCpu', 'raw', 'fsync', 'ofRaw'])
      expect((line[k] as { median: number }).median).toBeGreaterThan(0);
  });
  it('concurrent-split: the concurrent workload at the default and with fsync and the outbox switched off, each against the default', () => {
    const lines = bench('concurrent-split.ts');
    expect(lines.map((l) => l.variant)).toEqual([
      'default (FULL, outbox)',
      'NORMAL, outbox',
      'FULL, no outbox',
      'NORMAL, no outbox',
    ]);
    for (const l of lines)
      expect((l.steps as { median: number }).median > 0 && (l.commits as { median: number }).median > 0).toBe(true);
    expect(lines[0].vsDefault).toEqual({ median: 1, min: 1, max: 1 });
    // the share of each repetition spent inside the batches' commits was measured (the wrapper reached the store's commit)
    for (const l of lines)
      for (const k of ['commitWallShare', 'commitCpuShare'])
        expect((l[k] as { median: number }).median, `${l.variant} ${k}`).toSatisfy((x: number) => x > 0 && x <= 1.05);
  });
  it('statements: what a durable step sends to SQLite (and Postgres when up), one run and several at once, traced', () => {
    const [line] = bench('statements.ts', '3', '4');
    const perStep = line.perStep as Record<string, { statements: number; commits: number }>;
    const keys = ['sqlite, one run', 'sqlite, 4 runs at once'];
    if (pg) keys.push('postgres, one run', 'postgres, 4 runs at once');
    expect(Object.keys(perStep)).toEqual(keys);
    for (const k of keys) expect(perStep[k].statements, k).toBeGreaterThan(0);
  });
  it.skipIf(!pg)('concurrent on Postgres', () => {
    const [line] = bench('concurrent.ts', 'postgres');
    expect(line).toMatchObject({ bench: 'concurrent', backend: 'postgres', runs: 4 });
    expect((line.ours as { median: number }).median).toBeGreaterThan(0);
  });
  it("langgraph: WaymarkSaver (and LangGraph's savers when installed) on one graph, SQLite", () => {
    const lines = bench('langgraph-saver.ts', 'sqlite');
    expect(lines.find((l) => l.who === 'waymark')).toMatchObject({ bench: 'langgraph-saver', backend: 'sqlite', T: 3 });
    expect(lines.find((l) => l.who === 'waymark')!.bytes as number).toBeGreaterThan(0);
  });
  it('lease cost: unfenced vs leased writes on SQLite (and Postgres when up)', () => {
    const lines = bench('lease-cost.ts', pg ? 'both' : 'sqlite');
    expect(lines[0]).toMatchObject({ bench: 'lease-cost', backend: 'sqlite', R: 2, T: 3 });
    for (const l of lines)
      expect((l.unfenced as { median: number }).median > 0 && (l.leased as { median: number }).median > 0).toBe(true);
  });
  it('plane-hold: agent steps/s connected to a plane (its own process) and not, four variants', () => {
    const lines = bench('plane-hold.ts');
    expect(lines.map((l) => l.variant)).toEqual([
      'plain tool, lease 30 s',
      'plain tool, lease 300 ms',
      'idempotent effect per turn, lease 30 s',
      'idempotent effect per turn, lease 300 ms',
    ]);
    for (const l of lines) expect((l.ratio as { median: number }).median).toBeGreaterThan(0);
  });
  it("run-page: a long run's page loaded cold in Chromium on both UIs (HTML bytes, first contentful paint, height, main-thread time, server CPU, the plane's SQL statements)", () => {
    const lines = bench('run-page.ts');
    expect(lines.map((l) => [l.ui, l.rows])).toEqual([
      ['waymark ui (SQLite)', 30],
      ['plane inspector (PGlite)', 30],
      // the raw limit: a one-line page loaded the same way
      ['one-line page (node:http)', undefined],
    ]);
    for (const l of lines.slice(0, 2))
      for (const k of ['bytes', 'fcpMs', 'heightPx', 'taskMs', 'layoutMs', 'serverCpuMs'])
        expect((l[k] as { median: number }).median, `${l.ui} ${k}`).toBeGreaterThan(0);
    for (const k of ['bytes', 'fcpMs', 'taskMs'])
      expect((lines[2][k] as { median: number }).median, `${lines[2].ui} ${k}`).toBeGreaterThan(0);
    expect(lines[1].statements).toBeGreaterThan(0);
  });
  it('run-list: the run list of many runs, its first page and every page, and the SQL of a page, on PGlite', () => {
    const [line] = bench('run-list.ts', '300', '1', 'pglite');
    expect(line).toMatchObject({ bench: 'run-list', target: 'pglite', runs: 300, pages: 1 });
    expect((line.firstPageMs as { median: number }).median).toBeGreaterThan(0);
    expect(line.statements).toBeGreaterThan(0);
  });
  it.skipIf(!pg)('run-list on Postgres and PGlite', () => {
    const lines = bench('run-list.ts', '300', '1', 'both');
    expect(lines.map((l) => l.target)).toEqual(['postgres', 'pglite']);
    for (const l of lines) expect(l.statements).toBeGreaterThan(0);
  });
  it('storage growth', () => {
    const [ours] = bench('steps.ts', 'storage', 'sqlite');
    expect(ours).toMatchObject({ bench: 'storage', backend: 'sqlite', who: 'waymark' });
    expect((ours.exponent as { median: number }).median).toBeLessThan(1.3);
  });
  it.skipIf(!pg)('storage growth on Postgres', () => {
    const [ours] = bench('steps.ts', 'storage', 'postgres');
    expect(ours).toMatchObject({ bench: 'storage', backend: 'postgres', who: 'waymark' });
    expect((ours.bytes as Record<string, number>)['400']).toBeGreaterThan((ours.bytes as Record<string, number>)['50']);
  });
  it('resume cost, put, ingest, drain and drain RSS', () => {
    const [resume] = bench('resume-cost.ts', '5', '1', 'sqlite');
    expect(resume).toMatchObject({ bench: 'resume', turns: 5 });
    for (const k of ['callMs', 'totalMs', 'processMs'])
      expect((resume.waymark as Record<string, { median: number }>)[k].median).toBeGreaterThan(0);
    const ingest = bench('ingest.ts', '1000', 'pglite', '2');
    expect(ingest.map((l) => [l.writers, l.errors])).toEqual([[2, 0]]);
    expect(bench('drain.ts', '300', 'pglite')[0]).toMatchObject({ bench: 'drain', rows: 300 });
    expect(bench('drain-rss.ts', '3000')[0]).toMatchObject({ bench: 'drain-rss', rows: 3000 });
    expect(bench('wal-pages.ts', '10')[0]).toMatchObject({ bench: 'wal-pages', turns: 10 });
    expect(bench('commit-cost.ts', '20', '1')[0]).toMatchObject({ bench: 'commit-cost', commits: 20 });
  }, 900_000);
  it.skipIf(!pg)(
    'ingest with one and two plane processes on one Postgres (the built binary)',
    () => {
      const [line] = bench('ingest-planes.ts', '2000', '4');
      expect(line).toMatchObject({ bench: 'ingest-planes', rows: 2000, writers: 4, reps: 1, errors: 0 });
      for (const k of ['one', 'two', 'oneCpu', 'twoCpu', 'scale'])
        expect((line[k] as { median: number }).median).toBeGreaterThan(0);
    },
    900_000,
  );
  it.skipIf(!pg)(
    'fleet: laptops (stores, connectPlane, serveDecisions, agents) in worker processes on one plane process (the built binary)',
    () => {
      const [line] = bench('fleet.ts');
      expect(line).toMatchObject({ bench: 'fleet', n: 3, layout: 'one', errors: 0, shed: 0 });
      for (const k of ['rowsPerSec', 'requestsPerSec', 'planeCpuPerRowMs', 'commitsPerSec'])
        expect(line[k] as number, k).toBeGreaterThan(0);
      // every laptop is alone on its runs: none fetches one back, none is served another's changes (the writer feed),
      // every row reached the plane once, no effect ran twice
      expect(line).toMatchObject({ restores: 0, clientRestores: 0, changeEntriesPerSec: 0 });
      const check = line.check as { runs: number; rows: number; decisions: number };
      expect(check.runs).toBeGreaterThan(0);
      expect(check.rows).toBeGreaterThan(0);
      // every other run pauses for a decision the bench records: each applied once, by its laptop, and served to its
      // laptop alone (the writer's decision feed: about one entry per decision, not one per laptop)
      expect(check.decisions).toBeGreaterThanOrEqual(3);
      expect(check).toMatchObject({ mismatched: [], effectsTwice: [], decisionsWrong: [] });
      expect(line.decisionsInWindow as number).toBeGreaterThan(0);
      expect(line.decisionEntriesPerDecision as number).toBeLessThan(2);
    },
    900_000,
  );
  it.skipIf(!pg)(
    "ingest-rss: a plane process's RSS at first start, under ingest and after restart, on PGlite and Postgres (the built binary)",
    () => {
      const lines = bench('ingest-rss.ts', '1000', '2');
      expect(lines.map((l) => l.backend)).toEqual(['pglite', 'postgres']);
      for (const l of lines)
        for (const k of ['rowsPerSec', 'firstStartMb', 'peakMb', 'endMb', 'restartMb'])
          expect((l[k] as { median: number }).median, `${l.backend} ${k}`).toBeGreaterThan(0);
    },
    900_000,
  );
  it.skipIf(!pg)('ingest-long-run: one-row batches into a short and a long run, on Postgres', () => {
    const [line] = bench('ingest-long-run.ts', '600', '1');
    expect(line).toMatchObject({ bench: 'ingest-long-run', rows: 600, reps: 1 });
    for (const k of ['shortMs', 'longMs', 'ratio']) expect(line[k] as number, k).toBeGreaterThan(0);
  });
  it.skipIf(!pg)(
    "run.ts steps --before: issue 19's CPU target judged against the before tree's steps measured in the same run",
    () => {
      // this tree stands in for the before tree: the plumbing is what is checked, not the figure
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'steps', '--before', ROOT], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, WAYMARK_BENCH_SMOKE: '1' },
        timeout: 240_000,
      });
      expect(r.status, r.stderr.slice(-800)).toBe(0);
      expect(r.stdout).toContain('== steps, before issue 19 (');
      const row = r.stdout.split('\n').find((l) => l.startsWith('| 2. steps per CPU-second SQLite NORMAL'));
      expect(row).toMatch(/measured in this run: \d+ \[\d+–\d+\]\) \| \d+ \[\d+–\d+\] = \d+\.\d\d× before/);
      expect(row).toMatch(/\| (yes|\*\*MISS\*\*) \|$/);
    },
    300_000,
  );
  it('run.ts refuses a --before directory that is not a prepared tree, naming each problem, and runs nothing', () => {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', 'steps', '--before', '/nonexistent-before-tree'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no bench/steps.ts there');
    expect(r.stderr).toContain('no node_modules there');
    expect(r.stdout).not.toContain('==');
  });
  it('run.ts refuses a --skip naming an unknown bench or leaving nothing to run, naming the problem, and runs nothing', () => {
    for (const [args, problem] of [
      [['all', '--skip', 'bogus'], '--skip bogus: no such bench'],
      [['put', '--skip', 'put'], '--skip put leaves nothing to run'],
      [['all', '--skip'], '--skip needs a comma-separated list of bench names'],
    ] as const) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(problem);
      expect(r.stdout).not.toContain('==');
    }
  });
  it.skipIf(!pg)('put beside the raw commit rate', () => {
    expect(bench('store-put.ts', '50')[0]).toMatchObject({ bench: 'store-put', rows: 50 });
  });
});
