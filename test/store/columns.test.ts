/** The positional column values the SQLite store binds say the same as the named columns (the Postgres store's), in the order of their lists. */
import { describe, expect, it } from 'vitest';
import {
  CHECKPOINT_COLUMNS,
  EXECUTION_COLUMNS,
  checkpointColumns,
  checkpointValues,
  executionColumns,
  executionValues,
} from '../../client/store/columns.js';
import type { Checkpoint } from '../../shared/rows.js';
import { uuidv7 } from '../../shared/ids.js';

// every field distinct, so a swapped pair of columns cannot pass
const row: Checkpoint = {
  id: uuidv7(),
  executionId: 'run-é-1',
  seq: 7,
  nodeId: 'turn:3',
  turn: 3,
  step: 'tool_call',
  status: 'interrupted',
  agentPath: 'agent:a',
  parentId: uuidv7(),
  state: { v: 1, kind: 'full', state: { messages: [{ role: 'user', content: 'hi' }] } },
  nodeInput: { a: 1 },
  nodeOutput: { b: 2 },
  interruptReason: 'approve',
  interruptContext: { c: 3 },
  createdAt: '2026-12-05T10:00:00.000Z',
  writerId: 'sqlite-w',
};

describe('column values bound positionally', () => {
  it('a checkpoint: the values of checkpointColumns, in CHECKPOINT_COLUMNS order', () => {
    const named = checkpointColumns(row);
    expect(Object.keys(named)).toEqual([...CHECKPOINT_COLUMNS]);
    expect(checkpointValues(row)).toEqual(CHECKPOINT_COLUMNS.map((c) => named[c]));
  });

  it('an execution: the values of executionColumns, in EXECUTION_COLUMNS order', () => {
    const named = executionColumns(row);
    expect(Object.keys(named)).toEqual([...EXECUTION_COLUMNS]);
    expect(executionValues(row)).toEqual(EXECUTION_COLUMNS.map((c) => named[c]));
  });
});
