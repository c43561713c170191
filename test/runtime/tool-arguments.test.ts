/**
 * A tool's arguments are parsed interpreted for its first calls in a process
 * and compiled after (parseArguments): whichever mode a call lands in, the
 * answer is the schema's own — the same success, value and issues.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../client/index.js';
import { parseArguments } from '../../client/runtime/tool.js';

const schema = z.object({
  t: z.number().int(),
  name: z.string().min(1),
  tags: z.array(z.string()).optional(),
  mode: z.enum(['a', 'b']).default('a'),
  opts: z.object({ deep: z.boolean(), n: z.coerce.number() }).strict().optional(),
});
const fresh = () => tool({ name: 'work', description: 'work', parameters: schema, execute: () => 'ok' });
const plain = (r: z.ZodSafeParseResult<unknown>) => (r.success ? { ok: true, data: r.data } : { ok: false, issues: r.error.issues });

describe('parseArguments', () => {
  it('answers as the schema does on every call, before and after the switch to the compiled parser', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({
            t: fc.integer(),
            name: fc.string(),
            tags: fc.option(fc.array(fc.string()), { nil: undefined }),
            mode: fc.constantFrom('a', 'b', 'c'),
            opts: fc.option(fc.record({ deep: fc.boolean(), n: fc.oneof(fc.integer(), fc.string()) }), { nil: undefined }),
          }),
          fc.jsonValue(),
        ),
        (args) => {
          const t = fresh();
          const expected = plain(schema.safeParse(args));
          for (let call = 0; call < 20; call++) expect(plain(parseArguments(t, args))).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
