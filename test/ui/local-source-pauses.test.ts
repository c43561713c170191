/**
 * The local run page's pause facts, from the store's indexes: the decisions
 * shown are the run's decisions whose pause row is held here (not a plane
 * decision for a pause this store lacks, nor one naming another run's row),
 * and the answered pause is the run's newest `interrupted` pause row, with the
 * writer of the row after it. A run with several pauses, answered by decision
 * and from code, and a pause-step row of another status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { localSource } from '../../client/ui/local-source.js';
import { localUiApp } from '../../client/ui/serve.js';
import { uuidv7 } from '../../shared/ids.js';
import type { Decision } from '../../shared/rows.js';
import { pause, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-local-pauses-');
let store: SqliteCheckpointer;
const ids = { first: '', second: '', afterSecond: '', other: '' };
let applied: Decision;

const decision = (executionId: string, checkpointId: string, source: 'local' | 'plane'): Decision => ({
  decisionId: uuidv7(),
  executionId,
  checkpointId,
  approved: true,
  metadata: {},
  decidedBy: 'manager@example.com',
  source,
  decidedAt: new Date().toISOString(),
});

/** Open a pause on `id` after its newest row; resolves with the pause row's id. */
async function paused(id: string, turn: number, prevId: string): Promise<string> {
  const { pending } = await store.recordInterrupt(
    { ...pause(id, turn), prevId },
    { reason: 'approval', context: null },
  );
  return pending.checkpointId;
}

beforeAll(async () => {
  store = new SqliteCheckpointer({ path: tmp.file('pauses.db'), writerId: 'laptop' });
  const run = 'refund-1';
  const start = await store.put(step(run, 0));
  // the first pause, answered by a decision recorded here
  ids.first = await paused(run, 1, start.id);
  applied = decision(run, ids.first, 'local');
  await store.recordDecision(applied);
  const resumed = await store.claimInterrupt(
    { executionId: run, checkpointId: ids.first },
    { next: { ...step(run, 2), prevId: ids.first }, decisionId: applied.decisionId },
  );
  // the second pause, answered from code; the row after it is another writer's
  ids.second = await paused(run, 3, resumed!.checkpoint!.id);
  const other = new SqliteCheckpointer({ path: tmp.file('pauses.db'), writerId: 'server' });
  const next = await other.claimInterrupt(
    { executionId: run, checkpointId: ids.second },
    { next: { ...step(run, 4), prevId: ids.second } },
  );
  ids.afterSecond = next!.checkpoint!.id;
  await other.close();
  // a pause-step row that is not a pause (completed), after the last answered pause
  await store.put({ ...pause(run, 5), status: 'completed', prevId: ids.afterSecond });
  // decisions this store does not hold the pause of: one for a pause it lacks, one naming another run's row
  const elsewhere = await store.put(step('another-run', 0));
  ids.other = await paused('another-run', 1, elsewhere.id);
  await store.recordDecision(decision(run, uuidv7(), 'plane'));
  await store.recordDecision(decision(run, ids.other, 'plane'));
});
afterAll(async () => {
  await store?.close();
  tmp.cleanup();
});

describe("the local run page's pauses", () => {
  it('shows the decisions of pauses held in this run only: the unheld ones (a pause not here, another run’s row) are left out', async () => {
    const shown = await localSource(store).runDecisions!('refund-1');
    expect(shown.map((d) => [d.decisionId, d.state, d.appliedBy])).toEqual([[applied.decisionId, 'applied', 'laptop']]);
    // the store itself lists all three for the run, two of them not held
    expect((await store.listDecisions({ executionId: 'refund-1' })).items.map((d) => d.held)).toEqual([
      true,
      false,
      false,
    ]);
  });

  it('names the newest interrupted pause as answered, and the writer of the row after it as its claimer', async () => {
    const p = await localSource(store).pauseState('refund-1');
    expect(p).toMatchObject({ state: 'answered', pending: { checkpointId: ids.second }, claimedBy: 'server' });
    expect(p?.claimedAt).toBe((await store.getById(ids.afterSecond))!.createdAt);
  });

  it('a pause a cancel closed is shown cancelled, claimed by nobody (it was shown claimed by the writer of the cancel marker)', async () => {
    const start = await store.put(step('cancelled-run', 0));
    const at = await paused('cancelled-run', 1, start.id);
    const c = await store.cancel('cancelled-run', { reason: 'customer withdrew' });
    expect(c.closedPause?.checkpointId).toBe(at);
    const p = await localSource(store).pauseState('cancelled-run');
    expect(p).toMatchObject({ state: 'cancelled', pending: { checkpointId: at }, claimedBy: null, claimedAt: null });
    const html = await (await localUiApp(store).fetch(new Request('http://127.0.0.1/runs/cancelled-run'))).text();
    const section = /<section aria-labelledby="pause-h"[\s\S]*?<\/section>/
      .exec(html)![0]
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ');
    expect(section).toContain('closed by a cancel of the run, not answered');
    expect(section).toContain('cancelled');
    expect(section).not.toContain('claimed by');
  });

  it('an open pause is open; a run with no pause has none', async () => {
    expect(await localSource(store).pauseState('another-run')).toMatchObject({
      state: 'open',
      pending: { checkpointId: ids.other },
    });
    await store.put(step('no-pause', 0));
    expect(await localSource(store).pauseState('no-pause')).toBeNull();
  });
});
