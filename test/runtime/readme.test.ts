import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = join(ROOT, 'test-output', `readme-${process.pid}`);

/** The README's quick start, run exactly as written, in three separate processes. */
describe('README quick start works when pasted', () => {
  beforeAll(() => {
    // the package imports itself by name ('waymark'), which resolves to dist/ (built by test/global-setup.ts)
    mkdirSync(DIR, { recursive: true });
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = /```ts\n\/\/ quickstart: refund\.ts\n([\s\S]*?)```/.exec(readme);
    if (!block) throw new Error('quick start block not found in README.md');
    writeFileSync(join(DIR, 'refund.ts'), block[1]);
  });
  afterAll(() => rmSync(DIR, { recursive: true, force: true }));

  const run = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'refund.ts', ...args], { cwd: DIR, encoding: 'utf8' });

  it('pauses, resumes in another process with one charge, then refuses a second resume', () => {
    const a = run('start');
    expect(a.status, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/^paused \{ order: '1042', amount: 5000 \}/);
    const b = run('approve');
    expect(b.status, b.stderr).toBe(0);
    expect(b.stdout).toBe('charging 5000 for order 1042\ncompleted Refund for order 1042 is on its way.\n');
    const c = run('approve');
    // the third approve is handled as the README shows: no uncaught exception, no stack trace
    expect(c.status, c.stderr).toBe(0);
    expect(c.stderr).toBe('');
    expect(c.stdout).toMatch(/^already resumed: execution 'refund-1042' already finished/);
    const waymark = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), ...args], { cwd: DIR, encoding: 'utf8' });
    const inspect = waymark('inspect', '--db', 'runs.db', 'refund-1042');
    expect(inspect.stdout).toMatch(/run_end\s+run_end\s+completed/);
    expect(inspect.stdout).toMatch(/manager_approval: answered with \{"approved":true,"metadata":\{"approver":"alice"\}\}/);
    const paused = waymark('runs', '--db', 'runs.db', '--state', 'paused');
    expect(paused.status).toBe(0);
    expect(paused.stdout).toBe('no runs match\n');
  });
});
