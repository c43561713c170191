import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../client/cli/main.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
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
    await store.put({ executionId: 'c-crashed', nodeId: 'turn:0', turn: 0, step: 'llm_call', status: 'completed', agentPath: 'agent:x', state: { messages: [] } });
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
    expect((await cli(['inspect', '--db', db, 'nope'])).code).toBe(1);
    expect((await cli(['runs'])).code).toBe(2);
    await expect(cli(['runs', '--db', tmp.file('missing.db')])).rejects.toThrow(/no store/);
  });
});
