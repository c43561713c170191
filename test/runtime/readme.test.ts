import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPlaneProcess, waymarkAsync } from '../helpers/plane-process.js';

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

  /** Write the README's `// <where>: <file>` block into the test directory. */
  const writeBlock = (text: string, where: string, file: string) => {
    const block = new RegExp(`\`\`\`ts\n// ${where}: ${file.replace('.', '\\.')}[^\n]*\n([\\s\\S]*?)\`\`\``).exec(text);
    expect(block, `README's ${where} ${file} block`).not.toBeNull();
    writeFileSync(join(DIR, file), block![1]);
  };
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

  it('the Approvals section, pasted after the quick start: agent.ts and worker.ts as shown, a second refund paused, decided from the shell, applied once by the worker', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Approvals'), readme.indexOf('### Approving from a screen'));
    writeBlock(readme, 'quickstart', 'agent.ts');
    writeBlock(section, 'approvals', 'worker.ts');
    const lines = (/```sh\n(npx tsx refund\.ts start [\s\S]*?)```/.exec(section)?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter(Boolean);
    expect(lines.map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual(['npx tsx refund.ts', 'npx waymark decide', 'npx tsx worker.ts']);
    const argv = (l: string) =>
      l
        .match(/'[^']*'|\S+/g)!
        .slice(2)
        .map((a) => a.replace(/^'|'$/g, ''));
    const start = run(...argv(lines[0]!).slice(1));
    expect(start.status, start.stderr).toBe(0);
    expect(start.stdout).toMatch(/^paused /);
    const waymark = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), ...args], { cwd: DIR, encoding: 'utf8' });
    const decided = waymark(...argv(lines[1]!));
    expect([decided.status, decided.stderr]).toEqual([0, '']);
    // the finished quick-start run is refused, saying it is completed (not that the store lacks it)
    const finished = waymark('decide', 'refund-1042', '--db', 'runs.db', '--approve');
    expect([finished.status, finished.stderr]).toEqual([1, expect.stringMatching(/^waymark: PAUSE_NOT_FOUND: execution 'refund-1042' is completed; it has no open pause/)]);

    // the worker, with no plane in its environment, applies the decision; SIGTERM stops it cleanly
    const env = { ...process.env };
    delete env.WAYMARK_PLANE_URL;
    const worker = spawn(process.execPath, ['--import', 'tsx', ...argv(lines[2]!)], { cwd: DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    worker.stderr.on('data', (c) => (err += c));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      worker.stdout.on('data', (c) => {
        out += c;
        if (out.includes('applied refund-1043 completed')) resolve();
      });
      worker.once('exit', () => reject(new Error(`worker exited before applying: ${out}${err}`)));
    });
    worker.kill('SIGTERM');
    expect(await exited, err).toBe(0);
    expect(out).toBe('charging 5000 for order 1042\napplied refund-1043 completed\n');
  });

  it("the plane handoff, pasted after the quick start: sync.ts and other-machine.ts as shown; the quick start's unconnected approve is then refused and charges nothing", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    writeBlock(readme, 'quickstart', 'agent.ts');
    writeBlock(readme, 'plane', 'sync.ts');
    writeBlock(readme, 'plane', 'other-machine.ts');
    const [exportKey, ...lines] = (/```sh\n(export WAYMARK_API_KEY=[^\n]*\nnpx tsx refund\.ts start refund-2001[\s\S]*?)```/.exec(readme)?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter(Boolean);
    const keyCommand = /^export WAYMARK_API_KEY=\$\(npx waymark (plane keys create [^|]+)\| tail -n 1\)$/.exec(exportKey)?.[1]?.trim();
    expect(keyCommand).toBe('plane keys create --project local --scopes ingest,read --name laptop');
    expect(lines).toEqual(['npx tsx refund.ts start refund-2001', 'npx tsx sync.ts', 'npx tsx other-machine.ts refund-2001', 'npx tsx refund.ts approve refund-2001']);
    // the plane as the README starts it for this flow: `npx waymark plane` in the quick start's directory (port 0, not 4600)
    const plane = await startPlaneProcess([], { cwd: DIR });
    try {
      // the key command as pasted, in the quick start's directory: the last line it prints is the key
      const created = await waymarkAsync(keyCommand!.split(/\s+/), { cwd: DIR });
      expect(created.code, created.stderr).toBe(0);
      const env = { ...process.env, WAYMARK_PLANE_URL: plane.url, WAYMARK_API_KEY: created.stdout.trim().split('\n').pop()! };
      // not spawnSync: the plane answers from this process's event loop
      const tsx = async (line: string) => {
        const child = spawn(process.execPath, ['--import', 'tsx', ...line.split(' ').slice(2)], { cwd: DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        const [status] = (await once(child, 'exit')) as [number | null];
        return { status, stdout, stderr };
      };
      const start = await tsx(lines[0]);
      const sync = await tsx(lines[1]);
      const other = await tsx(lines[2]);
      const approve = await tsx(lines[3]);
      expect(start.stdout, start.stderr).toMatch(/^paused \{ order: '1042', amount: 5000 \}/);
      expect(sync.stdout, sync.stderr).toMatch(/pendingRows: 0/);
      expect([other.status, other.stdout], other.stderr).toEqual([0, 'charging 5000 for order 1042\ncompleted Refund for order 1042 is on its way.\n']);
      // handled as the README shows: exit 0, no stack, and no second charge
      expect([approve.status, approve.stderr]).toEqual([0, '']);
      expect(approve.stdout).toMatch(/^not connected: execution 'refund-2001' is held by a plane .*nothing was claimed\n$/);
      const inspect = spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), 'inspect', '--db', 'runs.db', 'refund-2001'], { cwd: DIR, encoding: 'utf8' });
      expect(inspect.stdout).toContain('ended: no (paused)');
    } finally {
      await plane.stop();
    }
  });
});
