/**
 * A tool's arguments are parsed interpreted for its first calls in a process
 * and compiled after (parseArguments): whichever mode a call lands in, the
 * answer is the schema's own — the same success, value and issues.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { tool } from '../../client/index.js';
import { COLD_PARSES, parseArguments } from '../../client/runtime/tool.js';

/** A new schema each time: zod caches its compiled parser on the schema, and parseArguments counts parses by schema. */
const makeSchema = () =>
  z.object({
    t: z.number().int(),
    name: z.string().min(1),
    tags: z.array(z.string()).optional(),
    mode: z.enum(['a', 'b']).default('a'),
    opts: z.object({ deep: z.boolean(), n: z.coerce.number() }).strict().optional(),
  });
const toolOf = (parameters: z.ZodType) => tool({ name: 'work', description: 'work', parameters, execute: () => 'ok' });
const plain = (r: z.ZodSafeParseResult<unknown>) =>
  r.success ? { ok: true, data: r.data } : { ok: false, issues: r.error.issues };

describe('parseArguments', () => {
  it('answers as the schema does on every call, before and after the switch to the compiled parser', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record(
            {
              t: fc.oneof(fc.integer(), fc.double()),
              name: fc.string(),
              tags: fc.option(fc.array(fc.string()), { nil: undefined }),
              mode: fc.constantFrom('a', 'b', 'c'),
              opts: fc.record(
                { deep: fc.boolean(), n: fc.oneof(fc.integer(), fc.string()), extra: fc.string() },
                { requiredKeys: ['deep', 'n'] },
              ),
            },
            { requiredKeys: ['t', 'name'] },
          ),
          fc.jsonValue(),
        ),
        (args) => {
          // the reference: another schema of the same shape, parsed by zod's default (compiled) path
          const expected = plain(makeSchema().safeParse(args));
          const t = toolOf(makeSchema());
          for (let call = 0; call < 20; call++) expect(plain(parseArguments(t, args))).toStrictEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it(`interprets the first ${COLD_PARSES} parses of a schema and compiles from the next one on`, () => {
    const schema = makeSchema();
    const parse = vi.spyOn(schema, 'safeParse');
    // two tools on one schema share its count (zod caches the compiled parser on the schema)
    const [a, b] = [toolOf(schema), toolOf(schema)];
    for (let i = 0; i < COLD_PARSES + 4; i++) parseArguments(i % 2 ? a : b, { t: i, name: 'x' });
    const modes = parse.mock.calls.map((c) => (c[1] as { jitless?: boolean } | undefined)?.jitless === true);
    expect(modes).toEqual([...Array(COLD_PARSES).fill(true), ...Array(4).fill(false)]);
    // another schema starts cold
    const other = makeSchema();
    const otherParse = vi.spyOn(other, 'safeParse');
    parseArguments(toolOf(other), { t: 1, name: 'x' });
    expect(otherParse.mock.calls[0][1]).toEqual({ jitless: true });
  });
});
