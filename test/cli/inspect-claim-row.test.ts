/** `waymark inspect` shows a pause's answer only from its claim row: the row right after the pause, as the UIs read it. */
import { afterEach, describe, expect, it } from 'vitest';
import { inspectRun } from '../../client/cli/store-commands.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { pause, step } from '../helpers/rows.js';

describe('inspect: which row answers a pause', () => {
  let store: SqliteCheckpointer | undefined;
  afterEach(async () => {
    await store?.close();
  });

  it('a tool row naming the pause as parent but not right after it is no answer: the pause shows closed, as on the run pages', async () => {
    store = new SqliteCheckpointer({ path: ':memory:', writerId: 'w' });
    const RUN = 'claim-row';
    const first = await store.put(step(RUN, 0));
    const p = await store.put({ ...pause(RUN, 1), parentId: first.id });
    // the next row is not the pause's claim; a later one names the pause and carries resumes
    await store.put({ ...step(RUN, 2), parentId: p.id });
    await store.put({
      executionId: RUN,
      nodeId: 'turn:1/tool:refund',
      turn: 1,
      step: 'tool_call',
      status: 'completed',
      agentPath: 'agent:t/tool:refund',
      parentId: p.id,
      state: { messages: [], resumes: [{ approved: true }] },
    });
    const lines: string[] = [];
    await inspectRun(store, RUN, (l: string) => lines.push(l), { json: true });
    const view = JSON.parse(lines.join('\n')) as { pauses: { state: string; answer: unknown }[] };
    expect(view.pauses).toEqual([expect.objectContaining({ state: 'closed', answer: null })]);
  });
});
