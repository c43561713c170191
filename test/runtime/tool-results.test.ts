/**
 * A tool whose result has no JSON form (a BigInt, a cycle, a function) has
 * still run: the run goes on with a result that says so, and nothing runs it
 * again. (It failed the run, and a resume of the failed run ran the effect a
 * second time.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, ScriptedModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-tool-results-');
afterAll(() => tmp.cleanup());

const cyclic = () => {
  const o: Record<string, unknown> = { id: 1 };
  o.self = o;
  return o;
};

describe('a tool result with no JSON form', () => {
  for (const [label, value, why] of [
    ['a BigInt', () => ({ amount: 10n }), 'BigInt'],
    ['a cycle', cyclic, 'circular'],
    ['a function', () => () => 1, 'a function'],
  ] as const) {
    it(`${label}: the run completes, the model is told the tool ran, and the effect ran once, resume included`, async () => {
      const store = new SqliteCheckpointer({ path: tmp.file(`${label.replace(/ /g, '-')}.db`) });
      const effects: string[] = [];
      const shown: string[] = [];
      const agent = new Agent({
        name: 'payer',
        model: new ScriptedModel(({ turn, messages }) => {
          if (turn === 0) return { toolCalls: [{ name: 'pay', arguments: { order: 'A' } }] };
          const last = messages.at(-1);
          shown.push(last?.role === 'tool' ? last.content : '');
          return { content: 'done' };
        }),
        tools: [
          tool({
            name: 'pay',
            description: 'pay an order',
            parameters: z.object({ order: z.string() }),
            execute: ({ order }) => {
              effects.push(order);
              return value();
            },
          }),
        ],
        checkpointer: store,
      });
      try {
        const r = await agent.run('pay A', { executionId: `r-${label}` });
        expect(r).toMatchObject({ status: 'completed', output: 'done' });
        expect(shown).toHaveLength(1);
        expect(shown[0]).toContain("Tool 'pay' ran, but its result has no JSON form");
        expect(shown[0]).toContain(why);
        // a finished run has nothing to resume: the tool is not run again
        await expect(agent.resume(`r-${label}`)).rejects.toMatchObject({ code: 'ALREADY_FINISHED' });
        expect(effects).toEqual(['A']);
      } finally {
        await store.close();
      }
    });
  }
});
