import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAI } from '../helpers/openai-server.js';
import { docSection, readDoc } from '../helpers/docs.js';
import { startPlaneProcess, waymarkAsync } from '../helpers/plane-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = join(ROOT, 'test-output', `readme-${process.pid}`);

/**
 * The README's quick start, run exactly as written, in three separate
 * processes; then docs/GUIDE.md's walkthroughs, which build on it, pasted in
 * the same directory.
 */
describe('README quick start and GUIDE walkthroughs work when pasted', () => {
  beforeAll(() => {
    // the package imports itself by name ('waymark'), which resolves to dist/ (built by test/global-setup.ts)
    mkdirSync(DIR, { recursive: true });
    const block = /```ts\n\/\/ quickstart: refund\.ts\n([\s\S]*?)```/.exec(readDoc('README.md'));
    if (!block) throw new Error('quick start block not found in README.md');
    writeFileSync(join(DIR, 'refund.ts'), block[1]);
  });
  afterAll(() => rmSync(DIR, { recursive: true, force: true }));

  /** Write a doc's `// <where>: <file>` block into the test directory. */
  const writeBlock = (text: string, where: string, file: string) => {
    const block = new RegExp(`\`\`\`ts\n// ${where}: ${file.replace('.', '\\.')}[^\n]*\n([\\s\\S]*?)\`\`\``).exec(text);
    expect(block, `the ${where} ${file} block`).not.toBeNull();
    writeFileSync(join(DIR, file), block![1]);
  };
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'refund.ts', ...args], { cwd: DIR, encoding: 'utf8' });
  /** A long-lived `npx tsx <file>` of the docs: waits until its output matches `until`, then stops it with `signal`; resolves with its exit and output. */
  const serveUntil = async (args: string[], env: NodeJS.ProcessEnv, until: RegExp, signal: NodeJS.Signals) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: DIR,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, sig) => resolve({ code, signal: sig })),
    );
    await new Promise<void>((resolve, reject) => {
      const check = () => until.test(stdout + stderr) && resolve();
      child.stdout.on('data', (c) => ((stdout += c), check()));
      child.stderr.on('data', (c) => ((stderr += c), check()));
      child.once('exit', () =>
        reject(new Error(`${args.join(' ')} exited before printing ${until}: ${stdout}${stderr}`)),
      );
    });
    child.kill(signal);
    return { ...(await exited), stdout, stderr };
  };

  it('pauses, resumes in another process with one charge, then refuses a second resume; a declined refund is said to be declined', () => {
    const a = run('start');
    expect(a.status, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/^paused \{ order: '1042', amount: 5000 \}/);
    // started again by mistake: said so, nothing run, no stack trace
    const again = run('start');
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
    expect(again.stdout).toMatch(/^already started: .*refund-1042/);
    const b = run('approve');
    expect(b.status, b.stderr).toBe(0);
    expect(b.stdout).toBe('charging 5000 for order 1042\ncompleted Refund for order 1042 is on its way.\n');
    const c = run('approve');
    // the third approve is handled as the README shows: no uncaught exception, no stack trace
    expect(c.status, c.stderr).toBe(0);
    expect(c.stderr).toBe('');
    expect(c.stdout).toMatch(
      /^already resumed: execution 'refund-1042': the pause at checkpoint \S+ was answered already; the run completed/,
    );
    // a decline: nothing charged, and the model's reply follows the decision (it said the refund was on its way)
    expect(run('start', 'refund-1044').stdout).toMatch(/^paused /);
    const declined = run('decline', 'refund-1044');
    expect([declined.status, declined.stderr]).toEqual([0, '']);
    expect(declined.stdout).toBe('completed Refund for order 1042 was declined.\n');
    // the same agent as the module the GUIDE's walkthroughs import (agent.ts), declined there too
    writeBlock(readDoc('README.md'), 'quickstart', 'agent.ts');
    writeFileSync(
      join(DIR, 'decline.ts'),
      [
        "import { SqliteCheckpointer } from 'waymark/sqlite';",
        "import { buildRefundAgent } from './agent.js';",
        "const store = new SqliteCheckpointer({ path: 'decline.db' });",
        'const agent = buildRefundAgent(store);',
        "await agent.run('Refund order 1042', { executionId: 'refund-1042' });",
        "console.log((await agent.resume('refund-1042', { approved: false })).output);",
        'await store.close();',
      ].join('\n'),
    );
    const module = spawnSync(process.execPath, ['--import', 'tsx', 'decline.ts'], { cwd: DIR, encoding: 'utf8' });
    expect([module.status, module.stderr, module.stdout]).toEqual([0, '', 'Refund for order 1042 was declined.\n']);
    // an id with no run: its stable code and why, exit 1, no stack trace
    const unknown = run('approve', 'refund-9999');
    expect([unknown.status, unknown.stdout]).toEqual([1, '']);
    expect(unknown.stderr).toMatch(/^EXECUTION_NOT_FOUND: .*refund-9999[^\n]*\n$/);
    const waymark = (...args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), ...args], { cwd: DIR, encoding: 'utf8' });
    const inspect = waymark('inspect', '--db', 'runs.db', 'refund-1042');
    expect(inspect.stdout).toMatch(/run_end\s+run_end\s+completed/);
    expect(inspect.stdout).toMatch(
      /manager_approval: answered with \{"approved":true,"metadata":\{"approver":"alice"\}\}/,
    );
    const paused = waymark('runs', '--db', 'runs.db', '--state', 'paused');
    expect(paused.status).toBe(0);
    expect(paused.stdout).toBe('no runs match\n');
  });

  it("the GUIDE's Approvals section, pasted after the quick start: agent.ts and worker.ts as shown, a second refund paused, decided from the shell, applied once by the worker", async () => {
    const section = docSection(readDoc('docs/GUIDE.md'), '## Approvals');
    writeBlock(readDoc('README.md'), 'quickstart', 'agent.ts');
    writeBlock(section, 'approvals', 'worker.ts');
    const lines = (/```sh\n(npx tsx refund\.ts start [\s\S]*?)```/.exec(section)?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter(Boolean);
    expect(lines.map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual([
      'npx tsx refund.ts',
      'npx waymark decide',
      'npx tsx worker.ts',
    ]);
    const argv = (l: string) =>
      l
        .match(/'[^']*'|\S+/g)!
        .slice(2)
        .map((a) => a.replace(/^'|'$/g, ''));
    const start = run(...argv(lines[0]!).slice(1));
    expect(start.status, start.stderr).toBe(0);
    expect(start.stdout).toMatch(/^paused /);
    const waymark = (...args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), ...args], { cwd: DIR, encoding: 'utf8' });
    const decided = waymark(...argv(lines[1]!));
    expect([decided.status, decided.stderr]).toEqual([0, '']);
    // recorded, not applied yet: inspect says so beside the open pause
    const waiting = waymark('inspect', '--db', 'runs.db', 'refund-1043');
    expect([waiting.status, waiting.stderr]).toEqual([0, '']);
    expect(waiting.stdout).toMatch(
      /manager_approval: open; decided approve by alice at .+ via local, not applied yet: a decision worker applies it/,
    );
    // the finished quick-start run is refused, saying it is completed (not that the store lacks it)
    const finished = waymark('decide', 'refund-1042', '--db', 'runs.db', '--approve');
    expect([finished.status, finished.stderr]).toEqual([
      1,
      expect.stringMatching(/^waymark: PAUSE_NOT_FOUND: execution 'refund-1042' is completed; it has no open pause/),
    ]);

    // the worker, with no plane in its environment, applies the decision; SIGTERM stops it cleanly
    const env = { ...process.env };
    delete env.WAYMARK_PLANE_URL;
    const worker = spawn(process.execPath, ['--import', 'tsx', ...argv(lines[2]!)], {
      cwd: DIR,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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

  it("the GUIDE's recover.ts as shown, beside agent.ts: brings back a run whose process died mid-step, and stops cleanly on Ctrl-C (SIGINT) and on SIGTERM", async () => {
    writeBlock(readDoc('README.md'), 'quickstart', 'agent.ts');
    writeBlock(docSection(readDoc('docs/GUIDE.md'), '## When a process dies'), 'recovery', 'recover.ts');
    // a run of the README's agent killed right after its first row, holding a short lease (the default 30 s would only slow the test)
    writeFileSync(
      join(DIR, 'crash.ts'),
      [
        "import { SqliteCheckpointer } from 'waymark/sqlite';",
        "import { killAt } from 'waymark/testing';",
        "import { buildRefundAgent } from './agent.js';",
        "const agent = buildRefundAgent(new SqliteCheckpointer({ path: 'runs.db', faults: killAt('store.put.afterCommit') }));",
        'Object.assign(agent, { leaseMs: 300 });',
        "await agent.run('Refund order 1042', { executionId: process.argv[2] });",
        '',
      ].join('\n'),
    );
    const env = { ...process.env };
    for (const [id, signal] of [
      ['refund-crash-1', 'SIGINT'],
      ['refund-crash-2', 'SIGTERM'],
    ] as const) {
      const crash = spawnSync(process.execPath, ['--import', 'tsx', 'crash.ts', id], { cwd: DIR, encoding: 'utf8' });
      expect(crash.signal, crash.stderr).toBe('SIGKILL');
      await new Promise((r) => setTimeout(r, 400));
      // `npx tsx recover.ts`, as the GUIDE runs it; its first pass resumes the run to the manager's pause
      const r = await serveUntil(['recover.ts'], env, new RegExp(`${id}: paused`), signal);
      expect([r.code, r.signal, r.stderr]).toEqual([0, null, '']);
      expect(r.stdout).toBe(`${id}: paused\n`);
    }
    const paused = spawnSync(
      process.execPath,
      [join(ROOT, 'bin/waymark.mjs'), 'runs', '--db', 'runs.db', '--state', 'paused'],
      { cwd: DIR, encoding: 'utf8' },
    );
    expect(paused.stdout).toMatch(/refund-crash-1[\s\S]*refund-crash-2/);
  });

  it("the CLI row of the README's table names every command `waymark --help` lists, in its order", () => {
    const row = readDoc('README.md')
      .split('\n')
      .find((l) => l.startsWith('| CLI '));
    expect(row).toBeDefined();
    const documented = [...row!.split('|')[3]!.matchAll(/`([^`]+)`/g)]
      .map((m) => m[1]!.replaceAll('/', '|'))
      .filter((c) => c !== 'waymark --help');
    const help = spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), '--help'], { encoding: 'utf8' }).stdout;
    const listed = help
      .slice(help.indexOf('commands:\n'))
      .split('\n')
      .slice(1)
      .filter((l) => /^ {2}\S/.test(l))
      .map((l) =>
        l
          .trim()
          .split(/\s{2,}/)[0]!
          .replace(/\s*\[?[A-Z_]+\]?$/, ''),
      );
    expect(listed.length).toBeGreaterThan(10);
    expect(documented).toEqual(listed);
  });

  it("the GUIDE's AI SDK section: support.ts as shown runs against an OpenAI-compatible server at its baseURL, streaming the answer", async () => {
    writeBlock(docSection(readDoc('docs/GUIDE.md'), '## AI SDK'), 'ai-sdk', 'support.ts');
    // the first request answered, the second refused as a model server refuses a bad request (not retried)
    const server = await startFakeOpenAI((_body, i) =>
      i === 0
        ? { content: 'Refund for order 1042 is on its way.', usage: { prompt: 10, completion: 8 } }
        : { status: 400 },
    );
    try {
      const file = join(DIR, 'support.ts');
      const text = readFileSync(file, 'utf8');
      expect(text).toContain("baseURL: 'http://127.0.0.1:8000/v1'");
      // the server of this test instead of the GUIDE's port 8000
      writeFileSync(file, text.replace('http://127.0.0.1:8000/v1', server.url));
      const run = async () => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'support.ts'], {
          cwd: DIR,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        const [code] = (await once(child, 'exit')) as [number | null];
        return { code, stdout, stderr };
      };
      expect(await run()).toEqual({ code: 0, stdout: 'Refund for order 1042 is on its way.', stderr: '' });
      expect(server.requests.length).toBe(1);
      // a run that fails says so and exits 1 (it printed nothing and exited 0)
      const failed = await run();
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^\nrun \S+ failed: MODEL_ERROR: /);
    } finally {
      await server.close();
    }
  });

  it("the GUIDE's plane handoff, pasted after the quick start: sync.ts and other-machine.ts as shown; the quick start's unconnected approve is then refused and charges nothing", async () => {
    const guide = readDoc('docs/GUIDE.md');
    const across = docSection(guide, '## Across machines');
    writeBlock(readDoc('README.md'), 'quickstart', 'agent.ts');
    writeBlock(across, 'plane', 'sync.ts');
    writeBlock(across, 'plane', 'other-machine.ts');
    const [exportKey, ...lines] = (
      /```sh\n(export WAYMARK_API_KEY=[^\n]*\nnpx tsx refund\.ts start refund-2001[\s\S]*?)```/.exec(across)?.[1] ?? ''
    )
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter(Boolean);
    const keyCommand = /^export WAYMARK_API_KEY=\$\(npx waymark (plane keys create [^|]+)\| tail -n 1\)$/
      .exec(exportKey)?.[1]
      ?.trim();
    expect(keyCommand).toBe('plane keys create --project local --scopes ingest,read --name laptop');
    expect(lines).toEqual([
      'npx tsx refund.ts start refund-2001',
      'npx tsx sync.ts',
      'npx tsx other-machine.ts refund-2001',
      'npx tsx refund.ts approve refund-2001',
    ]);
    // the plane as the GUIDE starts it for this flow: `npx waymark plane` in the quick start's directory (port 0, not 4600)
    const plane = await startPlaneProcess([], { cwd: DIR });
    try {
      // the key command as pasted, in the quick start's directory: the last line it prints is the key
      const created = await waymarkAsync(keyCommand!.split(/\s+/), { cwd: DIR });
      expect(created.code, created.stderr).toBe(0);
      const env = {
        ...process.env,
        WAYMARK_PLANE_URL: plane.url,
        WAYMARK_API_KEY: created.stdout.trim().split('\n').pop()!,
      };
      // not spawnSync: the plane answers from this process's event loop
      const tsx = async (line: string) => {
        const child = spawn(process.execPath, ['--import', 'tsx', ...line.split(' ').slice(2)], {
          cwd: DIR,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
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
      expect([other.status, other.stdout], other.stderr).toEqual([
        0,
        'charging 5000 for order 1042\ncompleted Refund for order 1042 is on its way.\n',
      ]);
      // handled as the GUIDE shows: exit 0, no stack, and no second charge
      expect([approve.status, approve.stderr]).toEqual([0, '']);
      expect(approve.stdout).toMatch(
        /^not connected: execution 'refund-2001' is held by a plane .*nothing was claimed\n$/,
      );
      const inspect = spawnSync(
        process.execPath,
        [join(ROOT, 'bin/waymark.mjs'), 'inspect', '--db', 'runs.db', 'refund-2001'],
        { cwd: DIR, encoding: 'utf8' },
      );
      expect(inspect.stdout).toContain('ended: no (paused)');

      // the Approvals section's worker.ts over this store prints why a decision was not applied: a decision for the run still paused here
      writeBlock(docSection(guide, '## Approvals'), 'approvals', 'worker.ts');
      const decided = await waymarkAsync(['decide', 'refund-2001', '--db', 'runs.db', '--approve'], { cwd: DIR });
      expect(decided.code, decided.stderr).toBe(0);
      const retry = /\(kept pending; retry in \d+ ms\)\n/;
      // with no plane in its environment: refused, with the code and message, kept pending
      const noPlane = { ...process.env };
      delete noPlane.WAYMARK_PLANE_URL;
      const unconnected = await serveUntil(['worker.ts'], noPlane, retry, 'SIGTERM');
      expect(unconnected.code, unconnected.stderr).toBe(0);
      expect(unconnected.stderr).toMatch(
        /^failed refund-2001 PLANE_NOT_CONNECTED: execution 'refund-2001' is held by a plane .*\(kept pending; retry in \d+ ms\)\n/,
      );
      // connected with a revoked key: the plane refuses the claim (401), and the line says so
      const second = await waymarkAsync(
        ['plane', 'keys', 'create', '--project', 'local', '--scopes', 'ingest,read', '--name', 'laptop-2'],
        { cwd: DIR },
      );
      const revoked = await waymarkAsync(['plane', 'keys', 'revoke', env.WAYMARK_API_KEY.slice(3, 19)], { cwd: DIR });
      expect(revoked.code, revoked.stderr).toBe(0);
      // both lines, in whichever order the claim and the feeds meet the 401
      const refused = await serveUntil(
        ['worker.ts'],
        env,
        /(?=[\s\S]*\(kept pending; retry in \d+ ms\)\n)(?=[\s\S]*the plane refused the key)/,
        'SIGINT',
      );
      expect(refused.code, refused.stderr).toBe(0);
      expect(refused.stderr).toMatch(/^failed refund-2001 CLAIM_REFUSED: .*401.*\(kept pending; retry in \d+ ms\)$/m);
      // and the replica's state says the key was refused, whether or not a decision waits
      expect(refused.stderr).toMatch(/^the plane refused the key \(revoked\?\): its decisions wait for a new one$/m);
      // connected with a live key: the run was finished on the other machine, so the decision is superseded, with the code and why
      const live = { ...env, WAYMARK_API_KEY: second.stdout.trim().split('\n').pop()! };
      const superseded = await serveUntil(['worker.ts'], live, /superseded refund-2001 /, 'SIGTERM');
      expect([superseded.code, superseded.stderr]).toEqual([0, '']);
      expect(superseded.stdout).toMatch(/^superseded refund-2001 ALREADY_RESUMED: \S.*\n$/);
    } finally {
      await plane.stop();
    }
  }, 420_000); // a dozen real processes one after another: a bound on a hang, met on a machine at load 16

  it("the GUIDE's LangGraph section as pasted: the saver fragment, then exclusive answering the interrupt once; a worker that comes later finds nothing open and runs nothing", () => {
    const section = docSection(readDoc('docs/GUIDE.md'), '## LangGraph');
    const [saver, exclusive] = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(saver).toMatch(/^\/\/ a fragment of your LangGraph program/);
    expect(exclusive).toMatch(/^\/\/ continuing the fragment above/);
    // what the fragment calls "your StateGraph" and "its input": an approval, then a charge written to a ledger
    const yours = [
      "import { appendFileSync } from 'node:fs';",
      "import { Annotation, END, interrupt, START, StateGraph } from '@langchain/langgraph';",
      'const State = Annotation.Root({ answer: Annotation<string> });',
      'const graph = new StateGraph(State)',
      "  .addNode('ask', () => ({ answer: String(interrupt('refund 1042?')) }))",
      "  .addNode('charge', (s) => (appendFileSync('lg-ledger.txt', 'charged ' + s.answer + '\\n'), {}))",
      "  .addEdge(START, 'ask').addEdge('ask', 'charge').addEdge('charge', END);",
      "const input = { answer: '' };",
    ].join('\n');
    writeFileSync(join(DIR, 'lg.ts'), `${yours}\n${saver}\n${exclusive}`);
    const first = spawnSync(process.execPath, ['--import', 'tsx', 'lg.ts'], { cwd: DIR, encoding: 'utf8' });
    expect([first.status, first.stderr, first.stdout]).toEqual([0, '', '']);
    expect(readFileSync(join(DIR, 'lg-ledger.txt'), 'utf8')).toBe('charged approved\n');
    // the run list names the thread as one, not as a crashed run for recoverRuns
    const runs = spawnSync(process.execPath, [join(ROOT, 'bin/waymark.mjs'), 'runs', '--db', 'runs.db'], {
      cwd: DIR,
      encoding: 'utf8',
    });
    const thread = runs.stdout.split('\n').find((l) => l.startsWith('support-42 '));
    expect(thread, runs.stdout).toMatch(/^support-42 +LangGraph thread \(no marker\) .* free\s*$/);
    // another worker with the same program, minus the fragment's own first invoke: the interrupt is answered
    const invoke = /^await app\.invoke\(input, .*\n/m;
    expect(saver).toMatch(invoke);
    writeFileSync(join(DIR, 'lg-late.ts'), `${yours}\n${saver.replace(invoke, '')}\n${exclusive}`);
    const late = spawnSync(process.execPath, ['--import', 'tsx', 'lg-late.ts'], { cwd: DIR, encoding: 'utf8' });
    expect([late.status, late.stderr, late.stdout]).toEqual([0, '', 'already answered\n']);
    expect(readFileSync(join(DIR, 'lg-ledger.txt'), 'utf8')).toBe('charged approved\n');
  });

  it('the LangGraph exclusive example answers by interrupt id: a worker shown the first of two interrupts, late, does not answer the second', () => {
    const section = docSection(readDoc('docs/GUIDE.md'), '## LangGraph');
    const [saver, exclusive] = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    const dir = join(DIR, 'two-asks');
    mkdirSync(dir, { recursive: true });
    // two approvals in a row, then a charge of both answers
    const yours = [
      "import { appendFileSync } from 'node:fs';",
      "import { Annotation, END, interrupt, START, StateGraph } from '@langchain/langgraph';",
      'const State = Annotation.Root({ first: Annotation<string>, second: Annotation<string> });',
      'const graph = new StateGraph(State)',
      "  .addNode('ask1', () => ({ first: String(interrupt('refund 1042?')) }))",
      "  .addNode('ask2', () => ({ second: String(interrupt('refund 1042 over the limit?')) }))",
      "  .addNode('charge', (s) => (appendFileSync('lg-ledger.txt', 'charged ' + s.first + ' ' + s.second + '\\n'), {}))",
      "  .addEdge(START, 'ask1').addEdge('ask1', 'ask2').addEdge('ask2', 'charge').addEdge('charge', END);",
      "const input = { first: '', second: '' };",
    ].join('\n');
    const invoke = /^await app\.invoke\(input, .*\n/m;
    const shownLine = /^const shown = .*\n/m;
    expect(exclusive).toMatch(shownLine);
    const openNow =
      "console.log((await app.getState({ configurable: { thread_id: 'support-42' } })).tasks.flatMap((t) => t.interrupts)[0]?.id ?? 'none');";
    const node = (file: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: dir, encoding: 'utf8' });
    writeFileSync(join(dir, 'start.ts'), `${yours}\n${saver}`);
    writeFileSync(join(dir, 'open.ts'), `${yours}\n${saver.replace(invoke, '')}\n${openNow}`);
    writeFileSync(join(dir, 'worker.ts'), `${yours}\n${saver.replace(invoke, '')}\n${exclusive}`);
    expect(node('start.ts').status).toBe(0);
    // the late worker was shown the first interrupt before the prompt one answered it
    const first = node('open.ts').stdout.trim();
    expect(first).toMatch(/^\S+$/);
    expect(first).not.toBe('none');
    const prompt = node('worker.ts');
    expect([prompt.status, prompt.stderr, prompt.stdout]).toEqual([0, '', '']);
    const second = node('open.ts').stdout.trim();
    expect(second).not.toBe(first);
    expect(second).not.toBe('none');
    writeFileSync(
      join(dir, 'late.ts'),
      `${yours}\n${saver.replace(invoke, '')}\n${exclusive.replace(shownLine, `const shown = ${JSON.stringify(first)};\n`)}`,
    );
    const late = node('late.ts');
    expect([late.status, late.stderr, late.stdout]).toEqual([0, '', 'already answered\n']);
    // the second interrupt is still open, nothing charged; its own worker answers it and the charge runs once
    expect(node('open.ts').stdout.trim()).toBe(second);
    expect(existsSync(join(dir, 'lg-ledger.txt'))).toBe(false);
    expect(node('worker.ts').status).toBe(0);
    expect(readFileSync(join(dir, 'lg-ledger.txt'), 'utf8')).toBe('charged approved approved\n');
  });
});
