import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { inputShape, surelyValidInput } from '../../client/store/rows.js';
import type { CheckpointInput } from '../../client/checkpointer.js';
import { uuidv7 } from '../../shared/ids.js';
import { LIMITS } from '../../shared/limits.js';

/** What the runtime writes for a tool step. */
const typical = (): CheckpointInput => ({
  executionId: 'run-1',
  prevId: uuidv7(),
  nodeId: 'turn:3/tool:work',
  turn: 3,
  step: 'tool_call',
  status: 'completed',
  agentPath: 'agent:bench/tool:work',
  state: { messages: [{ role: 'user', content: 'go' }], turn: 3, toolName: 'work', toolCallId: 'call_3_0' },
  nodeInput: { t: 3 },
});

const astral = '\u{1F600}';
/** Values each field is tried with: the edges of every rule of the schema, on both sides. */
const edges: Record<string, unknown[]> = {
  id: [undefined, null, uuidv7(), uuidv7().toUpperCase(), 'not-a-uuid', '0190aaaa-aaaa-4bbb-8ccc-dddddddddddd', 7],
  executionId: [
    '',
    'a',
    '.',
    '..',
    '...',
    'a\u0000b',
    'a\nb',
    'a\u007fb',
    '\uD800',
    'x'.repeat(LIMITS.executionIdLength),
    'x'.repeat(LIMITS.executionIdLength + 1),
    astral.repeat(LIMITS.executionIdLength / 2 + 1),
    5,
    null,
  ],
  prevId: [undefined, null, uuidv7(), 'nope', 0],
  nodeId: ['turn:0', '', 'x'.repeat(LIMITS.nodeIdLength + 1), 'a\tb', '\uDC00x'],
  turn: [0, -0, 1, 1.5, -1, NaN, Infinity, LIMITS.maxSeq, LIMITS.maxSeq + 1, '1', null, undefined],
  step: ['llm_call', 'graph_step', 'LLM_CALL', '', undefined],
  status: ['completed', 'cancelled', 'done', null],
  agentPath: ['agent:a', '', 'x'.repeat(LIMITS.agentPathLength + 1), 'a\u0000'],
  parentId: [undefined, null, uuidv7(), 'x'],
  state: [
    {},
    { messages: [] },
    Object.create(null),
    [],
    null,
    'state',
    new Map(),
    new Date(),
    { constructor: 1 },
    { constructor: () => 1 },
    { [Symbol('s')]: 1 },
    JSON.parse('{"__proto__": {"a": 1}}'),
    Object.create({ inherited: 1 }),
  ],
  interruptReason: [
    undefined,
    null,
    '',
    'why',
    'x'.repeat(LIMITS.reasonLength),
    'x'.repeat(LIMITS.reasonLength + 1),
    'a\u0000',
    '\uD800',
    3,
  ],
  createdAt: [undefined, new Date(0).toISOString(), 'yesterday'],
};

describe('the fast check of a checkpoint input', () => {
  it('accepts what the runtime writes (so a step skips the schema parse)', () => {
    expect(surelyValidInput(typical())).toBe(true);
    expect(inputShape().safeParse(typical()).success).toBe(true);
  });

  it('never accepts an input the schema refuses: every edge of every field', () => {
    for (const [field, values] of Object.entries(edges)) {
      values.forEach((v, i) => {
        const input = { ...typical(), [field]: v } as CheckpointInput;
        if (surelyValidInput(input)) expect(inputShape().safeParse(input).success, `${field}, edge #${i}`).toBe(true);
      });
    }
    for (const input of [null, undefined, [], 'input', 3])
      expect(surelyValidInput(input as unknown as CheckpointInput)).toBe(false);
  });

  it('never accepts an input the schema refuses: fields combined at random', () => {
    const pick = Object.fromEntries(Object.entries(edges).map(([k, vs]) => [k, fc.constantFrom(...vs)]));
    fc.assert(
      fc.property(fc.record(pick), fc.boolean(), (fields, withExtra) => {
        const input = {
          ...fields,
          ...(withExtra ? { extra: 1, nodeOutput: { x: 1 } } : {}),
        } as unknown as CheckpointInput;
        return !surelyValidInput(input) || inputShape().safeParse(input).success;
      }),
      { numRuns: 2000 },
    );
  });
});

describe('execution ids a URL path cannot name', () => {
  it("'.' and '..' are refused by the schema, naming the rule ('...' and ids holding dots are ordinary)", () => {
    for (const id of ['.', '..']) {
      const r = inputShape().safeParse({ ...typical(), executionId: id });
      expect(r.success, id).toBe(false);
      expect(r.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
        "executionId: must not be '.' or '..' (no URL path can name it)",
      ]);
      expect(surelyValidInput({ ...typical(), executionId: id })).toBe(false);
    }
    for (const id of ['...', 'a.b', './x', '.hidden'])
      expect(inputShape().safeParse({ ...typical(), executionId: id }).success, id).toBe(true);
  });
});
