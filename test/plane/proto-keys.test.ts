/**
 * A JSON object key `"__proto__"` is plain JSON, and the client keeps it
 * (shared/json.ts): the plane must store it as sent. The wire schemas once
 * rebuilt objects by assignment (`z.record`), which set the prototype instead
 * and dropped the key unseen: a decision's metadata lost it, a checkpoint's
 * state lost it, and two rows differing only there were judged duplicates.
 * Over real HTTP on PGlite, the bodies sent as raw JSON text.
 */
import { describe, expect, it } from 'vitest';
import { call, startTestPlane } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

describe('"__proto__" keys reach the plane as sent', () => {
  it("a decision's metadata and a checkpoint's state keep their __proto__ key; a row differing from a stored one only there is a conflict, not a duplicate", async () => {
    const plane = await startTestPlane('pglite');
    try {
      const key = await plane.key('p', ['ingest', 'read', 'approve']);
      const ingest = async (text: string) =>
        (await call(`${plane.url}/v1/ingest`, { key, raw: `{"protocol":1,"writerId":"w1","rows":[${text}]}` })).body;
      const rows = await eventsOf(async (s) => {
        await s.put(step('paused', 0));
        await s.recordInterrupt(pause('paused', 1), { reason: 'approve', context: null });
      }, 'w1');
      expect(await ingest(rows.map((r) => JSON.stringify(r)).join(','))).toMatchObject({ rejected: 0 });
      const checkpointId = (await call(`${plane.url}/v1/executions/paused`, { key })).body.pause.pending.checkpointId;
      const d = await call(`${plane.url}/v1/executions/paused/decision`, {
        key,
        raw: `{"checkpointId":"${checkpointId}","approved":true,"metadata":{"__proto__":{"ticket":"T-1"},"note":"ok"}}`,
      });
      expect(d.status, JSON.stringify(d.body)).toBe(201);
      // own keys (jsonb keeps no key order)
      const shown = (m: object) => Object.entries(m).sort(([a], [b]) => a.localeCompare(b));
      expect(shown(d.body.metadata)).toEqual([
        ['__proto__', { ticket: 'T-1' }],
        ['note', 'ok'],
      ]);
      expect(shown((await call(`${plane.url}/v1/decisions?after=0`, { key })).body.items[0].metadata)).toEqual([
        ['__proto__', { ticket: 'T-1' }],
        ['note', 'ok'],
      ]);

      const [one] = await eventsOf(async (s) => void (await s.put(step('state', 0))), 'w1');
      const text = JSON.stringify(one).replace('"state":{"messages"', '"state":{"__proto__":{"channel":1},"messages"');
      expect(text).toContain('__proto__');
      expect((await ingest(text)).results).toEqual([{ id: (one as { id: string }).id, status: 'accepted' }]);
      const back = (await call(`${plane.url}/v1/executions/state/rows`, { key })).body.items[0].state.state;
      expect(Object.keys(back)).toContain('__proto__');
      expect(Object.getOwnPropertyDescriptor(back, '__proto__')?.value).toEqual({ channel: 1 });
      // the same id with another value under __proto__: another payload
      const other = text.replace('{"channel":1}', '{"channel":2}');
      expect((await ingest(other)).results).toEqual([
        {
          id: (one as { id: string }).id,
          status: 'rejected',
          code: 'conflict',
          reason: expect.stringContaining('different payload'),
        },
      ]);
      expect((await ingest(text)).results).toEqual([{ id: (one as { id: string }).id, status: 'duplicate' }]);

      // its value is judged as any other key's: U+0000 (which jsonb cannot hold) or nesting past 64 is one refused row, not a 500
      const [good] = await eventsOf(async (s) => void (await s.put(step('beside-proto', 0))), 'w1');
      for (const [exec, value, why] of [
        ['proto-nul', '"a\\u0000b"', 'U+0000'],
        ['proto-deep', `${'{"a":'.repeat(200)}1${'}'.repeat(200)}`, 'nested deeper than 64'],
      ]) {
        const [row] = await eventsOf(async (s) => void (await s.put(step(exec, 0))), 'w1');
        const bad = JSON.stringify(row).replace('"state":{"messages"', `"state":{"__proto__":${value},"messages"`);
        const r = await ingest(`${bad},${JSON.stringify(good)}`);
        expect(r.results[0], exec).toMatchObject({
          status: 'rejected',
          code: 'invalid',
          reason: expect.stringContaining(why),
        });
        expect(r.results[0].reason, exec).toContain('__proto__');
        expect(r.results[1].status, exec).toMatch(/^(accepted|duplicate)$/);
      }
      const nul = await call(`${plane.url}/v1/executions/paused/decision`, {
        key,
        raw: `{"checkpointId":"${checkpointId}","approved":false,"metadata":{"__proto__":"a\\u0000b"}}`,
      });
      expect([nul.status, nul.body.error?.code]).toEqual([400, 'INVALID_DECISION']);
      expect(nul.body.error.message).toContain('metadata.__proto__');
    } finally {
      await plane.close();
    }
  }, 120_000);
});
