/**
 * An idempotency key read back for people (shared/idempotency-key.ts): a key the runtime made by default is the
 * effect's name and a digest of its arguments; a key of earlier versions holds the arguments themselves; any other
 * key is the application's, shown as given.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Agent, idempotent, ScriptedModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { stableStringify } from '../../shared/json.js';
import { argsLine, keyParts } from '../../shared/idempotency-key.js';
import { z } from 'zod';

describe('keyParts', () => {
  it("reads the runtime's default key as the effect's name and the digest of its arguments", async () => {
    const store = new SqliteCheckpointer({ path: ':memory:', writerId: 'w' });
    const charge = idempotent(async function charge(order: string, amount: number) {
      return { order, amount };
    });
    const pay = tool({
      name: 'pay',
      description: 'pay',
      parameters: z.object({ order: z.string() }),
      execute: async ({ order }) => charge(order, 100),
    });
    const agent = new Agent({
      name: 'a',
      model: new ScriptedModel(({ turn }) =>
        turn === 0 ? { toolCalls: [{ name: 'pay', arguments: { order: 'A-1' } }] } : { content: 'ok' },
      ),
      tools: [pay],
      checkpointer: store,
    });
    expect((await agent.run('go', { executionId: 'r' })).status).toBe('completed');
    const [entry] = await store.listIdempotent('r');
    const digest = createHash('sha256')
      .update(stableStringify(['A-1', 100]))
      .digest('hex');
    expect(keyParts(entry.key)).toEqual({ kind: 'default', name: 'charge', digest });
    await store.close();
  });

  it('reads an old key as the name and the arguments it holds', () => {
    const p = keyParts('charge:["A-1",100]');
    expect(p).toEqual({ kind: 'legacy', name: 'charge', args: ['A-1', 100] });
    expect(p.kind === 'legacy' && argsLine(p.args)).toBe('"A-1", 100');
    expect(argsLine(['x'.repeat(100)], 10)).toBe('"xxxxxxxx…');
  });

  it('takes any other key as given, whatever it looks like', () => {
    for (const key of [
      'ship-A-1',
      'refund:42',
      'a:[not json]',
      `:${'a'.repeat(64)}`,
      `x:${'A'.repeat(64)}`,
      'n:{"a":1}',
    ])
      expect(keyParts(key)).toEqual({ kind: 'given', key });
  });
});
