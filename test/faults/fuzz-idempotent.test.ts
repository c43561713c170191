/**
 * Fuzzed `idempotent` calls (fast-check) in real agent runs on a real SQLite
 * file: results that are not plain JSON (undefined fields, Dates, Maps,
 * `toJSON`, NaN, BigInt, cycles, text the store refuses), arguments and keys
 * of any length, two calls in flight at once, and one to three pauses after
 * the effect. Each effect whose result has a JSON form runs exactly once
 * across every resume and every call returns that form; one without a JSON
 * form escapes the run (EFFECT_NOT_RECORDED), never a tool result; a key that
 * cannot be stored is refused before the effect runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { Agent, idempotent, interrupt, ScriptedModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { jsonProblem } from '../../shared/json.js';
import { LIMITS } from '../../shared/limits.js';
import { scratchDir } from '../helpers/tmp.js';

const SEED = Number(process.env.WAYMARK_FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = Math.ceil(Number(process.env.WAYMARK_FUZZ_RUNS ?? 1000) / 10);

class Receipt {
  constructor(readonly url: string) {}
  toJSON() {
    return { receipt: this.url };
  }
}

/** Values that are not plain JSON; each builds a fresh value (a cycle cannot be shared by fast-check). */
const oddities: fc.Arbitrary<() => unknown> = fc.constantFrom(
  () => undefined,
  () => new Date(86_400_000),
  () => new Map([[1, 2]]),
  () => new Set(['a']),
  () => new Receipt('r/1'),
  () => NaN,
  () => -Infinity,
  () => () => 1,
  () => Symbol('s'),
  () => [undefined, () => 1],
  () => 10n,
  () => {
    const o: Record<string, unknown> = { a: 1 };
    o.self = o;
    return o;
  },
  () => ({
    toJSON: () => {
      throw new Error('SDK object refuses to serialise');
    },
  }),
  () => 'bad \u0000 text',
  () => '\uD800',
);

/** A result: JSON with odd values planted at a few places. */
const results: fc.Arbitrary<() => unknown> = fc
  .tuple(
    fc.jsonValue({ maxDepth: 3 }),
    fc.array(fc.tuple(fc.string({ maxLength: 6 }), oddities), { maxLength: 3 }),
    fc.boolean(),
  )
  .map(([base, planted, bare]) => () => {
    if (bare && planted.length) return planted[0][1]();
    const o: Record<string, unknown> = { base };
    for (const [k, make] of planted) o[k || 'k'] = make();
    return o;
  });

/** Arguments: short JSON, long text (an e-mail body, a prompt), now and then one with no stable JSON form. */
const args: fc.Arbitrary<unknown[]> = fc.array(
  fc.oneof(
    { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 4 },
    { arbitrary: fc.nat(3000).map((n) => 'x'.repeat(n)), weight: 4 },
    { arbitrary: fc.string({ maxLength: 40 }), weight: 4 },
    { arbitrary: fc.constantFrom(undefined, 'a\u0000b', 1n), weight: 1 },
  ),
  { maxLength: 3 },
);

/** Every string and key with lone surrogates and U+0000 replaced by U+FFFD (written here again, not the runtime's own). */
const replaced = (v: unknown): unknown =>
  typeof v === 'string'
    ? v.toWellFormed().replaceAll('\u0000', '\uFFFD')
    : Array.isArray(v)
      ? v.map(replaced)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [replaced(k), replaced(x)]))
        : v;

/** What recording `value` should give: its JSON form (text no store holds as U+FFFD), or that it has none the store takes. */
function expectedForm(value: unknown): { recordable: true; form: unknown } | { recordable: false } {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return { recordable: false };
  }
  const form = replaced(text === undefined ? null : JSON.parse(text));
  return jsonProblem(form) ? { recordable: false } : { recordable: true, form };
}

describe(`fuzzed idempotent results and keys across resumes (seed ${SEED}, ${RUNS} runs)`, () => {
  const tmp = scratchDir('waymark-fuzz-idem-');
  const store = new SqliteCheckpointer({ path: tmp.file('idem.db') });
  afterAll(async () => {
    await store.close();
    tmp.cleanup();
  });
  const counts = { recorded: 0, escaped: 0, refusedKeys: 0, refusedArgs: 0 };
  afterAll(() => console.log(`[fuzz-idempotent] seed ${SEED}: ${JSON.stringify(counts)}`));

  it('each effect with a JSON form runs once across resumes and returns that form; others escape; bad keys refuse before the effect', async () => {
    let case_ = 0;
    await fc.assert(
      fc.asyncProperty(
        results,
        args,
        fc.option(fc.nat(700), { nil: undefined }),
        fc.integer({ min: 1, max: 3 }),
        async (makeResult, callArgs, keyLength, pauses) => {
          const id = `fuzz-idem-${++case_}`;
          let effects = 0;
          const returned: unknown[] = [];
          const effect = idempotent<unknown[], unknown>(
            async function effect(..._a: unknown[]) {
              effects++;
              await new Promise((r) => setImmediate(r));
              return makeResult();
            },
            keyLength === undefined ? {} : { key: () => 'k'.repeat(keyLength) },
          );
          const t = tool({
            name: 'act',
            description: '',
            parameters: z.object({}),
            execute: async () => {
              returned.push(...(await Promise.all([effect(...callArgs), effect(...callArgs)])));
              for (let i = 0; i < pauses; i++) interrupt(`confirm-${i}`, null);
              return returned.at(-1);
            },
          });
          const model = new ScriptedModel(({ turn, toolResults }) =>
            turn === 0 ? { toolCalls: [{ name: 'act', arguments: {} }] } : { content: toolResults[0].content },
          );
          const agent = new Agent({ name: 'fuzz', model, tools: [t], checkpointer: store });

          const badKey = keyLength !== undefined && (keyLength === 0 || keyLength > LIMITS.idempotencyKeyLength);
          const badArgs = keyLength === undefined && jsonProblem(callArgs) !== null;
          if (badKey || badArgs) {
            const r = await agent.run('go', { executionId: id });
            expect(r.status).toBe('completed');
            expect(r.output).toMatch(badKey ? /not a usable idempotency key/ : /no stable JSON form/);
            expect(effects).toBe(0);
            counts[badKey ? 'refusedKeys' : 'refusedArgs']++;
            return;
          }
          const expected = expectedForm(makeResult());
          if (!expected.recordable) {
            await expect(agent.run('go', { executionId: id })).rejects.toMatchObject({ code: 'EFFECT_NOT_RECORDED' });
            expect(effects).toBe(1);
            expect(model.calls).toBe(1);
            expect(await store.latest(id)).toMatchObject({
              step: 'run_end',
              status: 'failed',
              nodeOutput: { error: { code: 'EFFECT_NOT_RECORDED' } },
            });
            counts.escaped++;
            return;
          }
          expect((await agent.run('go', { executionId: id })).status).toBe('paused');
          for (let i = 1; i < pauses; i++) expect((await agent.resume(id, { approved: true })).status).toBe('paused');
          const r = await agent.resume(id, { approved: true });
          expect(r.status).toBe('completed');
          expect(effects).toBe(1);
          expect(returned.length).toBe(2 * (pauses + 1));
          for (const v of returned) expect(v).toEqual(expected.form);
          const entries = await store.listIdempotent(id);
          expect(entries.length).toBe(1);
          expect(entries[0].key.length).toBeLessThanOrEqual(LIMITS.idempotencyKeyLength);
          counts.recorded++;
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
    expect(counts.recorded).toBeGreaterThan(0);
    expect(counts.escaped).toBeGreaterThan(0);
    expect(counts.refusedKeys).toBeGreaterThan(0);
  }, 600_000);
});
