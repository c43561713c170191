/**
 * Any model, not only the AI SDK's, may answer with empty or repeated tool
 * call ids: the agent gives each call of a reply its own id before the reply
 * is stored, so a resume after a crash finds the call that was cut off. The
 * process is SIGKILLed after the second call's row committed, before it ran;
 * the resume runs that call, once, and never the first again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { distinctCallIds, type Message } from '../../client/models/model.js';
import { toolCallIndex } from '../../client/runtime/run-state.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { ledgerOf, plainTwoCallsModel, twoCallsAgent } from '../ai-sdk/tool-ids-agent.js';

const CHILD = new URL('../ai-sdk/tool-ids-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-tool-ids-');
afterAll(() => tmp.cleanup());

describe('a plain Model whose tool calls share an id', () => {
  for (const [label, callId] of [
    ['empty', ''],
    ['repeated', 'same'],
  ] as const) {
    it(`two calls with ${label} ids, killed before the second runs: the resume runs the second once and never the first again`, async () => {
      const db = tmp.file(`${label}.db`);
      const ledger = tmp.file(`${label}.ledger`);
      const id = `plain-${label}`;
      const a = await runTs(CHILD, [db, ledger, id, callId, 'plain']);
      expect(a.signal, a.stderr).toBe('SIGKILL');
      expect(ledgerOf(ledger)).toEqual(['A']);

      const store = new SqliteCheckpointer({ path: db });
      try {
        await untilLeaseFree(store, id);
        const model = plainTwoCallsModel(callId);
        const r = await twoCallsAgent({ model, store, ledger }).resume(id);
        expect(r).toMatchObject({ status: 'completed', output: 'both charged' });
        expect(ledgerOf(ledger)).toEqual(['A', 'B']);
        // the model is shown two calls with distinct ids, and one result for each, in order
        const messages = model.requests.at(-1)!.messages;
        const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
        const results = messages.flatMap((m) => (m.role === 'tool' ? [m] : []));
        expect(calls.map((c) => c.arguments)).toEqual([{ order: 'A' }, { order: 'B' }]);
        expect(new Set(calls.map((c) => c.id)).size).toBe(2);
        expect(results.map((m) => [m.toolCallId, m.content])).toEqual([
          [calls[0].id, '{"charged":"A"}'],
          [calls[1].id, '{"charged":"B"}'],
        ]);
      } finally {
        await store.close();
      }
    });
  }

  it('distinctCallIds keeps distinct ids and the same array when nothing is shared; renames empty and repeated ones around the ids kept', () => {
    const fine = [
      { id: 'a', name: 't', arguments: {} },
      { id: 'b', name: 't', arguments: {} },
    ];
    expect(distinctCallIds(fine)).toBe(fine);
    const mixed = ['', 'call_0', 'x', 'x', ''].map((id) => ({ id, name: 't', arguments: {} }));
    const ids = distinctCallIds(mixed).map((c) => c.id);
    expect(ids[1]).toBe('call_0');
    expect(ids.every((i) => i !== '')).toBe(true);
    expect(new Set(ids).size).toBe(5);
    // the input is left as it was (a model may reuse its reply objects)
    expect(mixed.map((c) => c.id)).toEqual(['', 'call_0', 'x', 'x', '']);
  });

  it('a tool row written before ids were made distinct re-enters the call after those answered, not the first with its id', () => {
    const reply: Message = {
      role: 'assistant',
      content: null,
      toolCalls: [
        { id: 'same', name: 'charge', arguments: { order: 'A' } },
        { id: 'same', name: 'charge', arguments: { order: 'B' } },
        { id: 'other', name: 'charge', arguments: { order: 'C' } },
      ],
    };
    const answeredA: Message = { role: 'tool', toolCallId: 'same', name: 'charge', content: '{"charged":"A"}' };
    const user: Message = { role: 'user', content: 'charge A, B and C' };
    expect(toolCallIndex([user, reply], 'same')).toBe(0);
    expect(toolCallIndex([user, reply, answeredA], 'same')).toBe(1);
    expect(toolCallIndex([user, reply, answeredA], 'other')).toBe(2);
    // a row whose answered count fits none of the calls with its id names no call
    expect(toolCallIndex([user, reply, answeredA, answeredA], 'same')).toBe(-1);
    expect(toolCallIndex([user, reply], 'missing')).toBe(-1);
  });
});
