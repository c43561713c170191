import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, ScriptedModel, serveDecisions, type CheckpointInput } from '../../client/index.js';
import { main } from '../../client/cli/main.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { readDoc } from '../helpers/docs.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-cli-');
afterAll(() => tmp.cleanup());

async function cli(args: string[]): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const code = await main(args, (l) => lines.push(l));
  return { code, text: lines.join('\n') };
}

describe('waymark CLI on a SQLite store', () => {
  it('runs lists every state; inspect prints rows, the pending interrupt and idempotency entries', async () => {
    const db = tmp.file('cli.db');
    const store = new SqliteCheckpointer({ path: db });
    const ledger = new Ledger(tmp.file('l.jsonl'));
    const { agent } = refundAgent({ store, ledger });
    await agent.run(refundRequest('1', 20), { executionId: 'a-done' });
    await agent.run(refundRequest('2', 5000), { executionId: 'b-paused' });
    await store.put({
      executionId: 'c-crashed',
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:x',
      state: { messages: [] },
    });
    await store.close();

    const runs = await cli(['runs', '--db', db]);
    expect(runs.code).toBe(0);
    expect(runs.text).toMatch(/a-done\s+completed\s+4\s+run_end/);
    expect(runs.text).toMatch(/b-paused\s+paused\s+3/);
    expect(runs.text).toMatch(/c-crashed\s+running\/crashed \(no marker\)/);

    const ins = await cli(['inspect', '--db', db, 'a-done']);
    expect(ins.text).toMatch(/0\s+turn:0\s+llm_call\s+completed\s+agent:refund-bot/);
    expect(ins.text).toMatch(/3\s+run_end\s+run_end\s+completed/);
    // the default key: the function's name and a sha256 of its arguments' stable JSON
    expect(ins.text).toMatch(/idempotency entries: 1\n {2}charge:[0-9a-f]{64}\b/);
    const p = await cli(['inspect', '--db', db, 'b-paused']);
    expect(p.text).toMatch(/pending interrupt: manager_approval at turn:0\/tool:refund/);
    expect(p.text).toMatch(/"amount":5000/);
    // a run the store does not hold: the stable code, as cancel and delete say it (the binary prints it first and exits 1)
    await expect(cli(['inspect', '--db', db, 'nope'])).rejects.toMatchObject({
      code: 'EXECUTION_NOT_FOUND',
      message: "execution 'nope' has no rows in this store",
    });
    expect(await cli(['inspect', '--db', db, 'nope', '--json'])).toEqual({
      code: 1,
      text: JSON.stringify({ executionId: 'nope', found: false }),
    });
    expect((await cli(['runs'])).code).toBe(2);
    await expect(cli(['runs', '--db', tmp.file('missing.db')])).rejects.toThrow(/no store/);
  });

  it("nothing a run holds acts on the terminal: ids, agent paths and reasons with ESC, C1 controls or bidi overrides are printed escaped, by runs, inspect and the binary's errors", async () => {
    const db = tmp.file('terminal.db');
    const store = new SqliteCheckpointer({ path: db });
    // stored before names were checked, or by another tool: the store takes any printable id
    const id = 'evil\u202egnp.exe\u0085\u009b31m';
    await store.put({
      executionId: id,
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:x\u202ey',
      state: { messages: [] },
    });
    // a failed run whose error message holds a line break: in a cell it must not print a line that looks like a run
    const row = {
      executionId: 'fails',
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call' as const,
      status: 'completed' as const,
      agentPath: 'agent:x',
      state: { messages: [] },
    };
    await store.put(row);
    await store.put({
      ...row,
      nodeId: 'run_end',
      step: 'run_end',
      status: 'failed',
      nodeOutput: { error: { code: 'RUN_FAILED', message: 'boom\nfake-run  completed' } },
    });
    await store.close();
    const listed = await cli(['runs', '--db', db]);
    expect(listed.text).toContain('boom\\u000afake-run');
    expect(listed.text.split('\n').filter((l) => l.startsWith('fake-run'))).toEqual([]);
    // inspect's lines after its table too: the error message and an idempotency key with line breaks fake no line
    const again = new SqliteCheckpointer({ path: db });
    await again.putIdempotent('fails', 'k1\nidempotency entries: 0', 1);
    await again.close();
    const shown = await cli(['inspect', '--db', db, 'fails']);
    expect(shown.text).toContain('ended: failed: RUN_FAILED: boom\\u000afake-run  completed');
    expect(shown.text).toContain('  k1\\u000aidempotency entries: 0 → 1');
    expect(shown.text.split('\n').filter((l) => l.startsWith('idempotency entries:'))).toEqual([
      'idempotency entries: 1',
    ]);
    for (const args of [
      ['runs', '--db', db],
      ['inspect', '--db', db, id],
    ]) {
      const r = await cli(args);
      expect(r.text, args[0]).toContain('evil\\u202egnp.exe\\u0085\\u009b31m');
      expect(r.text, args[0]).not.toMatch(/[\u0080-\u009f\u202a-\u202e]/);
    }
    // a thrown error, as the binary prints it
    const bin = spawnSync(
      process.execPath,
      [fileURLToPath(new URL('../../bin/waymark.mjs', import.meta.url)), 'delete', '--db', db, 'x\u202eq', '--yes'],
      { encoding: 'utf8' },
    );
    expect(bin.stderr).toContain("waymark: EXECUTION_NOT_FOUND: execution 'x\\u202eq' has no rows in this store");
    expect(bin.stderr).not.toMatch(/[\u202a-\u202e]/);
    // --json stays exact: the id as stored
    const json = await cli(['runs', '--db', db, '--json']);
    expect(JSON.parse(json.text)[0].executionId).toBe(id);
    // the binary alone (no dist/ beside it): the original error is still printed, not one about the escaping
    const lone = tmp.file('lone/bin');
    mkdirSync(lone, { recursive: true });
    writeFileSync(
      join(lone, 'waymark.mjs'),
      readFileSync(fileURLToPath(new URL('../../bin/waymark.mjs', import.meta.url))),
    );
    const alone = spawnSync(process.execPath, [join(lone, 'waymark.mjs'), 'runs'], { encoding: 'utf8' });
    expect(alone.status).toBe(1);
    expect(alone.stderr).toMatch(/^waymark: ERR_MODULE_NOT_FOUND: .*main\.js/);
  });

  it('runs --state running marks each run without a marker: held by a live runner, STALE once its lease expired, or free', async () => {
    const db = tmp.file('leases.db');
    const store = new SqliteCheckpointer({ path: db });
    const row = (executionId: string): CheckpointInput => ({
      executionId,
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:x',
      state: { messages: [] },
    });
    const live = await store.acquireLease('a-live', { holder: 'w1#p1', ttlMs: 600_000 });
    await store.put(row('a-live'), { lease: live });
    const dead = await store.acquireLease('b-dead', { holder: 'w2#p2', ttlMs: 50 });
    await store.put(row('b-dead'), { lease: dead });
    await store.put(row('c-never'));
    await store.put({ ...row('d-done'), nodeId: 'run_end', step: 'run_end' });
    // a run whose row the plane refused because another machine took it over (as the drain records the refusal)
    const lostRow = await store.put(row('e-lost'));
    await store.markQuarantined({
      [lostRow.id]: "plane: taken_over: execution e-lost was taken over by writer 'w9' at seq 0",
    });
    while ((await store.getLease('b-dead'))?.live) await new Promise((r) => setTimeout(r, 20));
    await store.close();
    const runs = await cli(['runs', '--db', db, '--state', 'running']);
    expect(runs.code).toBe(0);
    expect(runs.text).toMatch(/a-live\s.*held by w1#p1 until/);
    expect(runs.text).toMatch(/b-dead\s.*STALE: w2#p2 expired .*\(recoverable\)/);
    expect(runs.text).toMatch(/c-never\s.*free \(recoverRuns takes it\)/);
    expect(runs.text).toMatch(
      /e-lost\s.*LOST: the plane refused its rows \(taken over or cancelled there: waymark sync status\)/,
    );
    expect(runs.text).not.toMatch(/e-lost\s.*\(recoverable\)/);
    expect(runs.text).not.toMatch(/d-done/);
    const json = JSON.parse((await cli(['runs', '--db', db, '--state', 'running', '--json'])).text);
    expect(
      json.map((r: { executionId: string; lease: { live: boolean } | null }) => [r.executionId, r.lease?.live ?? null]),
    ).toEqual([
      ['a-live', true],
      ['b-dead', false],
      ['c-never', null],
      ['e-lost', null],
    ]);
  });

  it('runs filters by state, time and count; inspect says why a run failed and what each pause was answered with; --json for scripts', async () => {
    const db = tmp.file('filters.db');
    const store = new SqliteCheckpointer({ path: db });
    const ledger = new Ledger(tmp.file('l2.jsonl'));
    const { agent } = refundAgent({ store, ledger });
    await agent.run(refundRequest('1', 20), { executionId: 'r-done' });
    await agent.run(refundRequest('2', 5000), { executionId: 'r-paused' });
    await agent.run(refundRequest('3', 7000), { executionId: 'r-answered' });
    await agent.resume('r-answered', { approved: true, metadata: { approver: 'alice' } });
    const failing = new Agent({
      name: 'looper',
      model: new ScriptedModel(() => ({ toolCalls: [{ name: 'nothing', arguments: {} }] })),
      tools: [],
      checkpointer: store,
      maxTurns: 2,
    });
    const failed = await failing.run('go', { executionId: 'r-failed' });
    expect(failed.status).toBe('failed');
    await store.close();

    const onlyFailed = await cli(['runs', '--db', db, '--state', 'failed']);
    expect(onlyFailed.code).toBe(0);
    expect(onlyFailed.text).toMatch(/r-failed\s+failed.*MAX_TURNS/);
    expect(onlyFailed.text).not.toMatch(/r-done|r-paused|r-answered/);
    const asJson = JSON.parse((await cli(['runs', '--db', db, '--json'])).text) as {
      executionId: string;
      state: string;
      error: { code: string } | null;
    }[];
    expect(asJson.map((r) => [r.executionId, r.state])).toEqual([
      ['r-answered', 'completed'],
      ['r-done', 'completed'],
      ['r-failed', 'failed'],
      ['r-paused', 'paused'],
    ]);
    expect(asJson.find((r) => r.executionId === 'r-failed')!.error!.code).toBe('MAX_TURNS');
    expect(JSON.parse((await cli(['runs', '--db', db, '--json', '--limit', '2'])).text)).toHaveLength(2);
    expect((await cli(['runs', '--db', db, '--since', '2099-01-01'])).text).toBe('no runs match');
    expect(JSON.parse((await cli(['runs', '--db', db, '--json', '--since', '1h'])).text)).toHaveLength(4);

    const why = await cli(['inspect', '--db', db, 'r-failed']);
    expect(why.text).toMatch(/ended: failed: MAX_TURNS: /);
    const answered = await cli(['inspect', '--db', db, 'r-answered']);
    expect(answered.text).toMatch(
      /pause at seq \d+ \(turn:0\/tool:refund\): manager_approval: answered with \{"approved":true,"metadata":\{"approver":"alice"\}\}/,
    );
    expect(answered.text).toMatch(/ended: completed/);
    const open = JSON.parse((await cli(['inspect', '--db', db, 'r-paused', '--json'])).text) as {
      end: unknown;
      pauses: { state: string }[];
      pending: { reason: string };
    };
    expect(open.end).toBeNull();
    expect(open.pauses.map((p) => p.state)).toEqual(['open']);
    expect(open.pending.reason).toBe('manager_approval');
  });
});

/** The installed binary, as a user runs it (dist/ is built by test/global-setup.ts). */
describe('waymark CLI arguments, through the real binary', () => {
  const BIN = fileURLToPath(new URL('../../bin/waymark.mjs', import.meta.url));
  const waymark = (...args: string[]) =>
    spawnSync(process.execPath, [BIN, ...args], {
      encoding: 'utf8',
      env: { ...process.env, WAYMARK_PLANE_URL: '', WAYMARK_API_KEY: '' },
    });

  it('cancel cancels a paused run (its pause closed) with a reason; runs --state cancelled lists it with the reason; inspect says how it ended; a second cancel writes nothing; a completed run is refused', async () => {
    const db = tmp.file('cancel.db');
    const store = new SqliteCheckpointer({ path: db });
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('lc.jsonl')) });
    await agent.run(refundRequest('1', 5000), { executionId: 'k-paused' });
    await agent.run(refundRequest('2', 20), { executionId: 'k-done' });
    await store.close();
    const c = await cli(['cancel', '--db', db, 'k-paused', '--reason', 'customer withdrew']);
    expect(c.code).toBe(0);
    expect(c.text).toBe('cancelled k-paused (marker seq 3, closed its pause at turn:0/tool:refund)');
    const runs = await cli(['runs', '--db', db, '--state', 'cancelled']);
    expect(runs.text).toMatch(/k-paused\s+cancelled\s+4\s+run_end\s.*RUN_CANCELLED: customer withdrew/);
    expect(runs.text).not.toContain('k-done');
    const ins = await cli(['inspect', '--db', db, 'k-paused']);
    expect(ins.text).toContain('ended: cancelled: RUN_CANCELLED: customer withdrew');
    expect(ins.text).toContain('pending interrupt: none');
    expect(ins.text).toContain('manager_approval: closed without an answer');
    expect((await cli(['cancel', '--db', db, 'k-paused'])).text).toMatch(
      /^k-paused was already cancelled \(marker [0-9a-f-]+\); nothing written$/,
    );
    await expect(cli(['cancel', '--db', db, 'k-done'])).rejects.toMatchObject({ code: 'ALREADY_FINISHED' });
    // the binary prints the refusal's stable code first, exit 1
    const refused = waymark('cancel', '--db', db, 'k-done');
    expect([refused.status, refused.stderr]).toEqual([
      1,
      expect.stringMatching(/^waymark: ALREADY_FINISHED: .*k-done/),
    ]);
    expect(
      JSON.parse((await cli(['runs', '--db', db, '--json'])).text).map((r: { executionId: string; state: string }) => [
        r.executionId,
        r.state,
      ]),
    ).toEqual([
      ['k-done', 'completed'],
      ['k-paused', 'cancelled'],
    ]);
  });

  it('delete removes a run with --yes only; an unknown run is EXECUTION_NOT_FOUND; nothing else is touched', async () => {
    const db = tmp.file('delete.db');
    const store = new SqliteCheckpointer({ path: db });
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('ld.jsonl')) });
    await agent.run(refundRequest('1', 5000), { executionId: 'x-paused' });
    await agent.run(refundRequest('2', 20), { executionId: 'x-done' });
    await store.close();
    const refused = waymark('delete', '--db', db, 'x-paused');
    expect([refused.status, refused.stderr]).toEqual([
      2,
      expect.stringContaining(
        "waymark delete: USAGE: give --yes: the run's rows are deleted from this store for good, and from a plane at the next sync",
      ),
    ]);
    expect((await cli(['runs', '--db', db])).text).toMatch(/x-paused\s+paused/);
    const d = waymark('delete', '--db', db, 'x-paused', '--yes');
    expect([d.status, d.stdout, d.stderr]).toEqual([
      0,
      'deleted x-paused: 3 row(s), 1 open pause(s), 0 idempotency entries\n',
      '',
    ]);
    const runs = await cli(['runs', '--db', db, '--json']);
    expect(JSON.parse(runs.text).map((r: { executionId: string }) => r.executionId)).toEqual(['x-done']);
    const again = waymark('delete', '--db', db, 'x-paused', '--yes');
    expect([again.status, again.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^waymark: EXECUTION_NOT_FOUND: execution 'x-paused' has no rows in this store; nothing was deleted/,
      ),
    ]);
    expect(JSON.parse((await cli(['delete', '--db', db, 'x-done', '--yes', '--json'])).text)).toEqual({
      checkpoints: 4,
      pending: 0,
      idempotency: 1,
      onPlane: false,
      localOnly: false,
    });
    // a run another process is running (its lease live): refused, kept, unless --force
    const held = new SqliteCheckpointer({ path: db });
    await held.put({
      executionId: 'x-running',
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:x',
      state: { messages: [] },
    });
    await held.acquireLease('x-running', { holder: 'worker-7', ttlMs: 600_000 });
    await held.close();
    const live = waymark('delete', '--db', db, 'x-running', '--yes');
    expect([live.status, live.stderr]).toEqual([
      1,
      expect.stringMatching(/^waymark: RUN_IN_PROGRESS: execution x-running is being run by worker-7/),
    ]);
    expect((await cli(['runs', '--db', db])).text).toContain('x-running');
    expect(waymark('delete', '--db', db, 'x-running', '--yes', '--force')).toMatchObject({
      status: 0,
      stdout: 'deleted x-running: 1 row(s), 0 open pause(s), 0 idempotency entries\n',
    });
  });

  it('decide records a decision for the open pause (only records it); a worker applies it once; a second decision, a wrong pause and bad flags are refused and change nothing', async () => {
    const db = tmp.file('decide.db');
    const ledger = new Ledger(tmp.file('decide.jsonl'));
    const store = new SqliteCheckpointer({ path: db });
    const { agent } = refundAgent({ store, ledger });
    await agent.run(refundRequest('7', 5000), { executionId: 'd-paused' });
    const pause = (await store.getPendingInterrupt('d-paused'))!;
    await store.close();

    const flags = waymark('decide', '--db', db, 'd-paused');
    expect([flags.status, flags.stderr]).toEqual([
      2,
      expect.stringContaining('give exactly one of --approve and --decline'),
    ]);
    const both = waymark('decide', '--db', db, 'd-paused', '--approve', '--decline');
    expect(both.status).toBe(2);
    // --user is checked with the other options (USAGE, exit 2, every problem named), not refused later as a bad decision
    const user = waymark('decide', '--db', db, 'd-paused', '--approve', '--decline', '--user', 'a\nb');
    expect([user.status, user.stderr]).toEqual([2, expect.stringContaining('USAGE')]);
    expect(user.stderr).toContain('give exactly one of --approve and --decline');
    expect(user.stderr).toContain('option \'--user\': "a\\nb" holds characters a terminal acts on ("\\u000a")');
    expect(waymark('decide', '--db', db, 'd-paused', '--approve', '--user', ' ').stderr).toContain(
      'option \'--user\': " " is blank',
    );
    const wrong = waymark(
      'decide',
      '--db',
      db,
      'd-paused',
      '--approve',
      '--pause',
      '01900000-0000-7000-8000-000000000000',
    );
    expect([wrong.status, wrong.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^waymark: PAUSE_NOT_FOUND: .*has no pause at checkpoint 01900000-0000-7000-8000-000000000000/,
      ),
    ]);
    const none = waymark('decide', '--db', db, 'no-such-run', '--approve');
    expect([none.status, none.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^waymark: PAUSE_NOT_FOUND: execution 'no-such-run' is not in this store; nothing was recorded/,
      ),
    ]);

    const ok = waymark(
      'decide',
      '--db',
      db,
      'd-paused',
      '--approve',
      '--comment',
      'receipt seen',
      '--user',
      'alice',
      '--pause',
      pause.checkpointId,
    );
    expect([ok.status, ok.stderr]).toEqual([0, '']);
    expect(ok.stdout).toMatch(
      new RegExp(
        `^approved the pause ${pause.checkpointId} of d-paused as 'alice' \\(decision [0-9a-f-]+\\); a decision worker applies it`,
      ),
    );
    const again = waymark('decide', '--db', db, 'd-paused', '--decline', '--user', 'bob');
    expect([again.status, again.stderr]).toEqual([
      1,
      expect.stringMatching(/^waymark: ALREADY_DECIDED: .*by 'alice'.*\(approved\); nothing was recorded/),
    ]);
    expect(ledger.charges()).toEqual([]);

    // the GUIDE's line, as pasted, in a folder whose runs.db holds a paused refund-1043
    const line = readDoc('docs/GUIDE.md')
      .split('\n')
      .find((l) => l.startsWith('npx waymark decide '))!;
    expect(line).toContain('--approve');
    const dir = tmp.file('readme-decide');
    mkdirSync(dir);
    const s1 = new SqliteCheckpointer({ path: join(dir, 'runs.db') });
    await refundAgent({ store: s1, ledger: new Ledger(join(dir, 'ledger.jsonl')) }).agent.run(
      refundRequest('1043', 5000),
      { executionId: 'refund-1043' },
    );
    await s1.close();
    const args = line
      .replace(/^npx waymark /, '')
      .match(/'[^']*'|\S+/g)!
      .map((a) => a.replace(/^'|'$/g, ''));
    const pasted = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8' });
    expect([pasted.status, pasted.stderr]).toEqual([0, '']);
    expect(pasted.stdout).toMatch(/^approved the pause [0-9a-f-]+ of refund-1043 as 'alice'/);

    // the worker applies it: completed, one charge, the comment reached the tool's Resume
    const s2 = new SqliteCheckpointer({ path: db });
    try {
      const [d] = (await s2.listDecisions({})).items;
      expect(d).toMatchObject({
        executionId: 'd-paused',
        approved: true,
        decidedBy: 'alice',
        source: 'local',
        metadata: { comment: 'receipt seen' },
        state: 'pending',
      });
      const stop = new AbortController();
      const outcomes: string[] = [];
      await serveDecisions({
        agent: refundAgent({ store: s2, ledger }).agent,
        store: s2,
        signal: stop.signal,
        pollMs: 50,
        onOutcome: (o) => {
          outcomes.push(o.outcome);
          stop.abort();
        },
      });
      expect(outcomes).toEqual(['applied']);
      expect((await s2.latest('d-paused'))?.step).toBe('run_end');
      expect(ledger.charges().length).toBe(1);
    } finally {
      await s2.close();
    }
    // a run that exists but finished: the refusal says so (same code), not that the store lacks it
    const done = waymark('decide', '--db', db, 'd-paused', '--approve', '--user', 'bob');
    expect([done.status, done.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^waymark: PAUSE_NOT_FOUND: execution 'd-paused' is completed; it has no open pause; nothing was recorded/,
      ),
    ]);
  });

  it('--help on every command and subcommand prints its usage; top-level help lists every command; --version prints the version', () => {
    const top = waymark('--help');
    expect(top.status).toBe(0);
    for (const c of ['runs', 'inspect', 'sync status', 'sync now', 'restore', 'quarantine', 'plane', 'plane keys'])
      expect(top.stdout).toContain(`  ${c}`);
    for (const c of [
      ['runs'],
      ['inspect'],
      ['delete'],
      ['sync', 'status'],
      ['sync', 'now'],
      ['restore'],
      ['quarantine'],
    ]) {
      for (const flag of ['--help', '-h']) {
        const r = waymark(...c, flag);
        expect(r.status, `${c.join(' ')} ${flag}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toMatch(new RegExp(`^usage: waymark ${c.join(' ')}`));
        expect(r.stdout).toContain('--db');
      }
    }
    const v = waymark('--version');
    expect(v.status).toBe(0);
    expect(v.stdout.trim()).toBe(
      JSON.parse(
        spawnSync('node', ['-p', 'JSON.stringify(require("./package.json").version)'], {
          encoding: 'utf8',
          cwd: fileURLToPath(new URL('../..', import.meta.url)),
        }).stdout,
      ),
    );
  });

  it('bad arguments: every problem named at once, near misses suggested, exit 2, and no database opened or created', () => {
    const db = tmp.file('never-created.db');
    const r = waymark('runs', '--dbb', db, '--state', 'wat', '--limit', '0', 'extra');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("unknown option '--dbb' (did you mean '--db'?)");
    expect(r.stderr).toContain(
      `option '--state': must be 'running', 'paused', 'completed', 'failed' or 'cancelled' (got "wat")`,
    );
    expect(r.stderr).toContain(`option '--limit': must be an integer, at least 1 (got "0")`);
    expect(r.stderr).toContain("unexpected argument 'extra'");
    expect(r.stderr).toContain('option --db is required');
    expect(r.stderr).not.toContain(`unexpected argument '${db}'`);
    expect(waymark('runz').stderr).toContain("unknown command 'runz' (did you mean 'runs'?)");
    expect(waymark('sync', 'nwo').stderr).toContain("did you mean 'sync now'?");
    expect(waymark('sync').stderr).toContain("'sync' needs a subcommand: status or now");
    // --help does not turn an unknown command into a success; a command group's help is the command list
    for (const args of [
      ['delete-run', '--help'],
      ['sync', 'nwo', '-h'],
    ]) {
      const r = waymark(...args);
      expect([r.status, r.stderr], args.join(' ')).toEqual([
        2,
        expect.stringMatching(/^waymark: USAGE: unknown (sub)?command/),
      ]);
    }
    expect(waymark('sync', '--help')).toMatchObject({ status: 0, stdout: expect.stringContaining('  sync now') });
    const restore = waymark('restore', '--db', db);
    expect(restore.status).toBe(2);
    for (const p of [
      'missing argument EXECUTION_ID',
      'a plane is required: --plane or WAYMARK_PLANE_URL',
      'a key is required: --key or WAYMARK_API_KEY',
    ])
      expect(restore.stderr).toContain(p);
    expect(waymark('runs', '--db', db, '--json=yes').stderr).toContain("option '--json' takes no value");
    const noValue = waymark('runs', '--db', db, '--limit');
    expect(noValue.stderr).toContain("waymark runs: USAGE: option '--limit' needs a value");
    expect(noValue.stderr).not.toContain("got 'true'");
    expect(spawnSync('ls', [db]).status).not.toBe(0);
  });

  it('plane CLI: --help/-h on every plane command and subcommand prints its usage', () => {
    for (const c of [
      ['plane'],
      ['plane', 'projects', 'create'],
      ['plane', 'projects', 'list'],
      ['plane', 'keys', 'create'],
      ['plane', 'keys', 'list'],
      ['plane', 'keys', 'revoke'],
      ['plane', 'prune'],
    ]) {
      for (const flag of ['--help', '-h']) {
        const r = waymark(...c, flag);
        expect(r.status, `${c.join(' ')} ${flag}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toMatch(new RegExp(`^usage: waymark ${c.join(' ')}`));
        expect(r.stdout).toContain('--data-dir');
      }
    }
    expect(waymark('plane', 'keys', 'create', '--help').stdout).toContain('--scopes');
    // every scope a key may have (plane/auth.ts SCOPES), in the plane's usage too
    expect(waymark('plane', '--help').stdout).toMatch(
      /plane keys create .*--scopes .*ingest, read, approve, cancel, operate, admin, operator/,
    );
    for (const [group, subs] of [
      ['keys', ['create', 'list', 'revoke']],
      ['projects', ['create', 'list']],
    ] as const) {
      const r = waymark('plane', group, '-h');
      expect(r.status).toBe(0);
      for (const s of subs) expect(r.stdout).toContain(`usage: waymark plane ${group} ${s}`);
    }
    expect(waymark('plane', 'help').stdout).toContain('waymark plane keys revoke KEY_ID');
  });

  it('plane CLI defect: unknown subcommands and stray arguments are errors with a suggestion, exit 2, nothing opened or started', () => {
    const dir = tmp.file('never-created-plane');
    const cases: [string[], string][] = [
      [['plane', 'key', 'list', '--data-dir', dir], "unknown command 'plane key' (did you mean 'plane keys'?)"],
      [
        ['plane', 'keys', 'lsit', '--data-dir', dir],
        "unknown subcommand 'plane keys lsit' (did you mean 'plane keys list'?)",
      ],
      [['plane', 'projetcs', 'list', '--data-dir', dir], "did you mean 'plane projects'?"],
      [['plane', 'keys', '--data-dir', dir], "'plane keys' needs a subcommand: create or list or revoke"],
      [['plane', 'keys', 'list', 'extra', '--data-dir', dir], "unexpected argument 'extra'"],
      [['plane', '--data-dir', dir, 'stray'], "unexpected argument 'stray'"],
      [['plane', '--data-dir', dir, '--prot', '0'], "unknown option '--prot' (did you mean '--port'?)"],
      [['plane', '--data-dir', dir, '--port', 'x'], `option '--port': must be an integer, from 0 to 65535 (got "x")`],
      [['plane', 'keys', 'revoke', '--data-dir', dir], 'missing argument KEY_ID'],
      [['plane', 'prune', '--data-dir', dir], 'option --older-than is required'],
      [
        ['plane', 'prune', '--older-than', '30 days', '--data-dir', dir],
        "option '--older-than' must be an age like 30d, 12h or 90m (got '30 days')",
      ],
      [['plane', 'prnue', '--older-than', '30d', '--data-dir', dir], "did you mean 'plane prune'?"],
    ];
    for (const [args, message] of cases) {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
      expect(r.status, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(message);
    }
    const create = waymark('plane', 'keys', 'create', '--scopes', 'ingest,root', '--data-dir', dir);
    expect(create.status).toBe(2);
    for (const p of ['option --project is required', 'unknown scope(s): root']) expect(create.stderr).toContain(p);
    expect(existsSync(dir)).toBe(false);
  });
});
