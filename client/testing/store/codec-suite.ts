/**
 * The store contract's conformance suite, part: the state codec across puts and handles: rows stored as they were at each put, frozen reads, two handles taking turns.
 * Run per backend by runStoreSuite (suite.ts), under the same describe title.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import type { State } from '../../../shared/codec.js';
import { contractTest, exec, input, withStore, type StoreHarness, type StoreSuiteOptions } from './harness.js';

export function runCodecSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    withStore(options, (s) => ({ h, store } = s));

    test('codec defect: a message edited in place between two puts is stored as it was at each put, on every handle', async () => {
      const a = exec();
      const msg: { role: string; content: string } = { role: 'user', content: 'deploy to staging' };
      const big = { role: 'system', content: 'policy '.repeat(200) };
      const r0 = await store.put(input(a, { state: { messages: [big, msg], turn: 0 } }));
      // the caller edits its own object after the put: row 0 must not change
      msg.content = 'deploy to prod';
      expect(((await store.readState(r0)).messages as { content: string }[])[1].content).toBe('deploy to staging');
      const r1 = await store.put(input(a, { turn: 1, state: { messages: [big, msg], turn: 1 } }));
      const other = await h.reopen();
      try {
        for (const reader of [store, other]) {
          expect(((await reader.readState(r0)).messages as { content: string }[])[1].content).toBe('deploy to staging');
          expect(((await reader.readState(r1)).messages as { content: string }[])[1].content).toBe('deploy to prod');
        }
        // an edit after the last put changes nothing either, for the writer's next row
        msg.content = 'edited again, never put';
        const r2 = await store.put(
          input(a, { turn: 2, state: { messages: [big, { role: 'user', content: 'deploy to prod' }], turn: 2 } }),
        );
        for (const reader of [store, other]) {
          expect(((await reader.readState(r2)).messages as { content: string }[])[1].content).toBe('deploy to prod');
        }
      } finally {
        await other.close();
      }
    });

    test('codec defect: readState returns frozen state that no reader can change for another', async () => {
      const a = exec();
      const r0 = await store.put(
        input(a, { state: { messages: [{ role: 'user', content: 'hi' }], turn: 0, note: { k: 1 } } }),
      );
      const other = await h.reopen();
      try {
        for (const reader of [store, other]) {
          const s = await reader.readState(r0);
          expect(Object.isFrozen(s)).toBe(true);
          expect(Object.isFrozen(s.messages)).toBe(true);
          expect(Object.isFrozen((s.messages as object[])[0])).toBe(true);
          expect(Object.isFrozen(s.note)).toBe(true);
          expect(() => (s.messages as unknown[]).push({ role: 'user', content: 'x' })).toThrow(TypeError);
          expect(() => {
            (s.messages as { content: string }[])[0].content = 'changed';
          }).toThrow(TypeError);
          expect(await reader.readState(r0)).toEqual({
            messages: [{ role: 'user', content: 'hi' }],
            turn: 0,
            note: { k: 1 },
          });
        }
        // the next put (on the cached cursor) still encodes against what was stored
        const r1 = await store.put(
          input(a, {
            turn: 1,
            state: {
              messages: [
                { role: 'user', content: 'hi' },
                { role: 'assistant', content: 'yo' },
              ],
              turn: 1,
            },
          }),
        );
        expect(await other.readState(r1)).toEqual({
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'yo' },
          ],
          turn: 1,
        });
      } finally {
        await other.close();
      }
    });

    test('codec defect: a non-array `messages` key is an ordinary field, kept on decode (full rows and deltas)', async () => {
      const a = exec();
      const states: State[] = [
        { messages: 'not a list', turn: 0 },
        { messages: { summary: 'compacted' }, turn: 1 },
        { messages: [{ role: 'user', content: 'now a list' }], turn: 2 },
        { messages: null, turn: 3 },
        { messages: 7, turn: 4, extra: true },
      ];
      const rows = [];
      for (const [i, s] of states.entries()) rows.push(await store.put(input(a, { turn: i, state: s })));
      const other = await h.reopen();
      try {
        for (const [i, r] of rows.entries()) {
          expect(await store.readState(r)).toEqual(states[i]);
          expect(await other.readState(r)).toEqual(states[i]);
        }
        // a delta chain where `messages` stays a field
        const b = exec();
        const chain: State[] = [];
        for (let i = 0; i < 6; i++)
          chain.push({ messages: { summary: `part ${i}`, long: 'x'.repeat(400) }, turn: i, big: 'y'.repeat(2000) });
        const brows = [];
        for (const [i, s] of chain.entries()) brows.push(await store.put(input(b, { turn: i, state: s })));
        expect(brows.some((r) => r.state.kind === 'delta')).toBe(true);
        for (const [i, r] of brows.entries()) expect(await other.readState(r)).toEqual(chain[i]);
      } finally {
        await other.close();
      }
    });

    test('two handles taking turns on one execution: each writes after the other, never on a stale row', async () => {
      // each handle caches the newest row it wrote; the other handle's write makes that cache stale
      const other = await h.reopen();
      try {
        const a = exec();
        const states: State[] = [];
        const rows = [];
        let messages: State['messages'] & unknown[] = [];
        for (let i = 0; i < 24; i++) {
          messages = [...messages, { role: 'assistant', content: `m${i}` }];
          const s: State = { messages, turn: i };
          states.push(s);
          // two writes by one handle (the second on its own cached row), then two by the other
          const by = Math.floor(i / 2) % 2 === 0 ? store : other;
          rows.push(await by.put(input(a, { turn: i, nodeId: `turn:${i}`, state: s })));
        }
        expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
        for (const r of rows) if (r.state.kind === 'delta') expect(r.state.prev).toBe(rows[r.seq - 1].id);
        for (const [i, r] of rows.entries()) {
          expect(await store.readState(r)).toEqual(states[i]);
          expect(await other.readState(r)).toEqual(states[i]);
        }
        expect((await store.list(a)).map((r) => r.id)).toEqual(rows.map((r) => r.id));
      } finally {
        await other.close();
      }
    });
  });
}
