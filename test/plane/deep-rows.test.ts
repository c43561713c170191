/**
 * A row nested deeper than a stack can write back as JSON text (JSON.parse
 * reads it; JSON.stringify overflows) is one refused row, quarantined with
 * the batch's other rows stored: it was a 500 for the whole batch, so one such
 * row held a drain's outbox back for good. Over real HTTP on PGlite.
 */
import { describe, expect, it } from 'vitest';
import { call, startTestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

describe('deeply nested rows', () => {
  it('a row nested 10,000 or 100,000 deep (as an array, and under a checkpoint) is refused invalid and quarantined; the rows beside it are stored', async () => {
    const plane = await startTestPlane('pglite');
    try {
      const key = await plane.key('p', ['ingest', 'read']);
      const [good] = await eventsOf(async (s) => void (await s.put(step('beside', 0))), 'w1');
      const [other] = await eventsOf(async (s) => void (await s.put(step('deep', 0))), 'w1');
      for (const depth of [10_000, 100_000]) {
        const deepArray = `${'['.repeat(depth)}${']'.repeat(depth)}`;
        const deepState = JSON.stringify(other).replace(
          '"state":{"messages"',
          `"state":{"x":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)},"messages"`,
        );
        const r = await call(`${plane.url}/v1/ingest`, {
          key,
          raw: `{"protocol":1,"writerId":"w1","rows":[${deepArray},${JSON.stringify(good)},${deepState}]}`,
        });
        expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
        // the reason is the schema's where an engine writes such a value back (V8 in Node 20 cannot): only the code is fixed
        expect(r.body.results).toEqual([
          {
            id: null,
            status: 'rejected',
            code: 'invalid',
            reason: expect.stringMatching(/nested deeper than 64|Invalid input/),
          },
          { id: (good as { id: string }).id, status: depth === 10_000 ? 'accepted' : 'duplicate' },
          {
            id: (other as { id: string }).id,
            status: 'rejected',
            code: 'invalid',
            reason: expect.stringContaining('nested deeper than 64'),
          },
        ]);
      }
      const q = await call(`${plane.url}/v1/quarantine`, { key });
      // one record per writer and text, which says what it can of the row: the array has nothing, the checkpoint its id
      const records = q.body.items as { code: string; payload: string; rowId: string | null }[];
      expect(records.map((i) => [i.code, i.rowId])).toEqual([
        ['invalid', null],
        ['invalid', (other as { id: string }).id],
      ]);
      expect(records[1].rowId).toBe((other as { id: string }).id);
      expect((await call(`${plane.url}/v1/executions/beside`, { key })).body.execution).toMatchObject({ rowCount: 1 });
    } finally {
      await plane.close();
    }
  }, 120_000);
});
