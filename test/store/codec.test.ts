import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  decodeChain,
  decodeState,
  encodeState,
  stateOfCursor,
  type ChainRow,
  type CodecCursor,
  type State,
} from '../../shared/codec.js';
import { CODEC } from '../../shared/limits.js';
import { uuidv7 } from '../../shared/ids.js';
import { EncodedState } from '../../shared/rows.js';
import { deepFreeze, type Json } from '../../shared/json.js';

/** Encode a sequence of states the way a store does; returns the stored rows. */
function encodeAll(states: State[], roundTrip = true): ChainRow[] {
  const rows: ChainRow[] = [];
  let cursor: CodecCursor | null = null;
  states.forEach((s, seq) => {
    const id = uuidv7();
    // round-trip through JSON as a store does, so no object identity is shared
    const e = encodeState(cursor, roundTrip ? (JSON.parse(JSON.stringify(s)) as State) : s, id, seq);
    cursor = e.cursor;
    rows.push({ id, seq, state: JSON.parse(e.text) });
  });
  return rows;
}

function decodeAt(rows: ChainRow[], seq: number): State {
  const target = rows[seq];
  const base = target.state.kind === 'full' ? seq : target.state.base;
  return decodeChain(rows.slice(base, seq + 1)).state;
}

const message: fc.Arbitrary<Json> = fc
  .record({
    role: fc.constantFrom('user', 'assistant', 'tool'),
    content: fc.oneof(fc.string(), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constant(null)),
    toolCalls: fc.option(
      fc.array(fc.record({ id: fc.uuid(), name: fc.string(), arguments: fc.jsonValue() }), { maxLength: 2 }),
      {
        nil: undefined,
      },
    ),
  })
  .map((m) => JSON.parse(JSON.stringify(m)) as Json);

const op = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.array(message, { minLength: 1, maxLength: 3 }).map((ms) => ({ kind: 'append' as const, ms })),
  },
  { weight: 1, arbitrary: fc.nat(10).map((n) => ({ kind: 'truncate' as const, n })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('turn', 'toolName', 'toolCallId', '__proto__', 'x'), fc.jsonValue())
      .map(([k, v]) => ({ kind: 'set' as const, k, v: JSON.parse(JSON.stringify(v ?? null)) as Json })),
  },
  { weight: 1, arbitrary: fc.constantFrom('turn', 'toolName', 'x').map((k) => ({ kind: 'unset' as const, k })) },
);

function play(ops: fc.Arbitrary<typeof op extends fc.Arbitrary<infer T> ? T : never>[] | unknown[]): State[] {
  const states: State[] = [];
  let messages: Json[] = [];
  let fields: Record<string, Json> = {};
  for (const o of ops as (
    | { kind: 'append'; ms: Json[] }
    | { kind: 'truncate'; n: number }
    | { kind: 'set'; k: string; v: Json }
    | { kind: 'unset'; k: string }
  )[]) {
    if (o.kind === 'append') messages = [...messages, ...o.ms];
    else if (o.kind === 'truncate') messages = messages.slice(0, Math.min(o.n, messages.length));
    else if (o.kind === 'set') fields = { ...fields, [o.k]: o.v };
    else {
      fields = { ...fields };
      delete fields[o.k];
    }
    const s: State = {};
    for (const [k, v] of Object.entries(fields))
      Object.defineProperty(s, k, { value: v, enumerable: true, writable: true, configurable: true });
    s.messages = messages;
    states.push(s);
  }
  return states;
}

describe('snapshot codec', () => {
  it('decode(encode(states)) == states for random histories, by decodeChain and by decodeState (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), (ops) => {
        const states = play(ops);
        const rows = encodeAll(states);
        for (const r of rows) expect(EncodedState.safeParse(r.state).success).toBe(true);
        for (let i = 0; i < states.length; i++) {
          const want = JSON.stringify(JSON.parse(JSON.stringify(states[i])));
          expect(JSON.stringify(decodeAt(rows, i))).toBe(want);
          // a reader's decode (no cursor) of the same chain: the same state
          const base = rows[i].state.kind === 'full' ? i : (rows[i].state as { base: number }).base;
          expect(JSON.stringify(decodeState(rows.slice(base, i + 1)))).toBe(want);
        }
      }),
      { numRuns: 300 },
    );
  });

  /** An agent-shaped history: per turn, an assistant message with a tool call, then a tool result; P bytes each. */
  function agentHistory(turns: number, p = 200): State[] {
    const states: State[] = [];
    let messages: Json[] = [{ role: 'user', content: 'x'.repeat(p) }];
    for (let t = 0; t < turns; t++) {
      states.push({ messages, turn: t });
      messages = [
        ...messages,
        { role: 'assistant', content: 'a'.repeat(p), toolCalls: [{ id: `c${t}`, name: 'refund', arguments: { t } }] },
      ];
      states.push({ messages, turn: t, toolName: 'refund', toolCallId: `c${t}` });
      messages = [...messages, { role: 'tool', toolCallId: `c${t}`, content: 'r'.repeat(p) }];
    }
    return states;
  }

  const bytesOf = (rows: ChainRow[]) => rows.reduce((n, r) => n + JSON.stringify(r.state).length, 0);

  it('stored bytes grow linearly with run length (400 turns), where full snapshots grow quadratically', () => {
    const b50 = bytesOf(encodeAll(agentHistory(50), false));
    const b400 = bytesOf(encodeAll(agentHistory(400), false));
    const exponent = Math.log(b400 / b50) / Math.log(8);
    expect(exponent).toBeLessThan(1.1);
    const naive = (t: number) => agentHistory(t).reduce((n, s) => n + JSON.stringify(s).length, 0);
    const naiveExponent = Math.log(naive(400) / naive(50)) / Math.log(8);
    expect(naiveExponent).toBeGreaterThan(1.8);
    // and every row still decodes to its full state
    const states = agentHistory(400);
    const rows = encodeAll(states, false);
    for (const i of [0, 1, 399, 400, 799]) expect(decodeAt(rows, i)).toEqual(states[i]);
  });

  it('cuts the chain with a full snapshot at least every maxChainRows rows', () => {
    const states = agentHistory(CODEC.maxChainRows, 4);
    const rows = encodeAll(states, false);
    let run = 0;
    let longest = 0;
    for (const r of rows) {
      run = r.state.kind === 'full' ? 1 : run + 1;
      longest = Math.max(longest, run);
    }
    expect(longest).toBeLessThanOrEqual(CODEC.maxChainRows);
    expect(rows.filter((r) => r.state.kind === 'full').length).toBeGreaterThanOrEqual(2);
  });

  it('rewrites (a summarised history) trigger a full snapshot instead of a long replay', () => {
    const states: State[] = [];
    for (let i = 0; i < 40; i++)
      states.push({ messages: [{ role: 'system', content: `summary ${i} ${'s'.repeat(500)}` }] });
    const rows = encodeAll(states);
    const chainBytes = rows.slice(1).reduce((n, r) => n + JSON.stringify(r.state).length, 0);
    expect(rows.filter((r) => r.state.kind === 'full').length).toBeGreaterThan(5);
    expect(chainBytes).toBeLessThan(40 * 600);
    expect(decodeAt(rows, 39)).toEqual(states[39]);
  });

  it('the stored text is JSON.stringify of the encoding, for random histories, frozen or not (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), fc.boolean(), (ops, frozen) => {
        let cursor: CodecCursor | null = null;
        play(ops).forEach((s, seq) => {
          const e = encodeState(cursor, frozen ? deepFreeze(s) : s, uuidv7(), seq);
          expect(e.text).toBe(JSON.stringify(e.encoded));
          cursor = e.cursor;
        });
      }),
      { numRuns: 200 },
    );
  });

  it("a cursor decoded from the stored rows counts the same sizes as the writer's own (property)", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), fc.boolean(), (ops, withBytes) => {
        const written: { row: ChainRow; cursor: CodecCursor }[] = [];
        let cursor: CodecCursor | null = null;
        play(ops).forEach((s, seq) => {
          const id = uuidv7();
          const e = encodeState(cursor, JSON.parse(JSON.stringify(s)) as State, id, seq);
          cursor = e.cursor;
          written.push({
            row: { id, seq, state: JSON.parse(e.text), ...(withBytes ? { bytes: e.text.length } : {}) },
            cursor: e.cursor,
          });
        });
        for (const [seq, w] of written.entries()) {
          const base = w.row.state.kind === 'full' ? seq : w.row.state.base;
          const decoded = decodeChain(written.slice(base, seq + 1).map((x) => x.row)).cursor;
          const sizes = (c: CodecCursor) => [
            c.id,
            c.base,
            c.chainRows,
            c.chainBytes,
            c.messagesBytes,
            c.messageCount,
            c.hasMessages,
          ];
          expect(sizes(decoded)).toEqual(sizes(w.cursor));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a cursor keeps its state after a later row was encoded from it, and encoding again from it (a retried write) is exact', () => {
    const m = (content: string): Json => deepFreeze({ role: 'assistant', content });
    const s0: State = { messages: [m('a'), m('b')], turn: 0 };
    const s1: State = { messages: [m('a'), m('b'), m('c')], turn: 1 };
    const s1b: State = { messages: [m('a'), m('b'), m('d'), m('e')], turn: 1 };
    const e0 = encodeState(null, s0, uuidv7(), 0);
    const e1 = encodeState(e0.cursor, s1, uuidv7(), 1);
    const e1b = encodeState(e0.cursor, s1b, uuidv7(), 1);
    const e2 = encodeState(e1.cursor, { ...s1, messages: [...(s1.messages as Json[]), m('f')] }, uuidv7(), 2);
    expect(stateOfCursor(e0.cursor)).toEqual(s0);
    expect(stateOfCursor(e1.cursor)).toEqual(s1);
    expect(stateOfCursor(e1b.cursor)).toEqual(s1b);
    expect(stateOfCursor(e2.cursor).messages).toEqual([m('a'), m('b'), m('c'), m('f')]);
    const rows = (es: (typeof e0)[], ids = es.map((e) => e.cursor.id)) =>
      es.map((e, seq) => ({ id: ids[seq], seq, state: JSON.parse(e.text) }));
    expect(decodeChain(rows([e0, e1b])).state).toEqual(s1b);
    expect(decodeChain(rows([e0, e1, e2])).state.messages).toEqual([m('a'), m('b'), m('c'), m('f')]);
    expect(Object.isFrozen(stateOfCursor(e1.cursor).messages)).toBe(true);
  });

  it('a broken chain is reported, not papered over', () => {
    const rows = encodeAll(agentHistory(3));
    const broken = [rows[0], rows[2]];
    expect(() => decodeChain(broken)).toThrow(/does not follow/);
    expect(() => decodeChain(rows.slice(1))).toThrow(/full snapshot/);
    expect(() => decodeState(broken)).toThrow(/does not follow/);
    expect(() => decodeState(rows.slice(1))).toThrow(/full snapshot/);
    expect(() => decodeState([])).toThrow(/empty snapshot chain/);
  });
});
