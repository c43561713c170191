import { afterAll, describe, expect, it } from 'vitest';
import {
  CAMPAIGN_POINTS,
  CLIENT_POINTS,
  PLANE_POINTS,
  PROXY_POINTS,
  RESUMER_POINTS,
  PlaneProcess,
  runCampaign,
  runTrial,
} from './campaign.js';
import { scratchDir } from '../helpers/tmp.js';

const SEED = Number(process.env.WAYMARK_CAMPAIGN_SEED ?? Date.now() % 100_000);
// every fault point once per `npm test` (the seed draws the hit counts and changes per run);
// `npm run soak` runs 300 trials
const TRIALS = Number(process.env.WAYMARK_CAMPAIGN_TRIALS ?? CAMPAIGN_POINTS.length);
const tmp = scratchDir('waymark-campaign-');
afterAll(() => tmp.cleanup());

describe(`kill campaign: ${TRIALS} trials, seed ${SEED} (replay: WAYMARK_CAMPAIGN_SEED=${SEED})`, () => {
  it('every run completes, the plane holds every row once, every charge happens once, nothing is lost', async () => {
    const summary = await runCampaign({
      trials: TRIALS,
      seed: SEED,
      dir: tmp.dir,
      onTrial: (r) =>
        console.log(
          `[campaign] ${r.trial} ${r.target} ${r.point}:${r.hits} ${r.killed ? 'killed' : 'not reached'}${r.violations.length ? ` VIOLATIONS: ${r.violations.join('; ')}` : ''}`,
        ),
    });
    console.log(`[campaign] seed ${SEED}: ${summary.trials} trials, kills ${JSON.stringify(summary.kills)}`);
    expect(summary.violations).toEqual([]);
    // every fault point was exercised and most trials really killed something
    expect(Object.keys(summary.kills).length).toBeGreaterThanOrEqual(
      Math.min(TRIALS, CLIENT_POINTS.length + PLANE_POINTS.length + PROXY_POINTS.length + RESUMER_POINTS.length) - 3,
    );
  }, 1_200_000);
});

describe('campaign shapes, one trial each', () => {
  it('request-level 400s from a proxy; a kill between the plane claim and the local claim; delete-and-restart under one id while connected, killed after the plane committed its batch and in the new run; concurrent resumers of successive pauses; catch-up restores after an offline double claim', async () => {
    const plane = new PlaneProcess(tmp.file('shapes-plane'));
    await plane.start();
    try {
      const key = await plane.key();
      const shapes = [
        { target: 'proxy', point: 'proxy.requestLevel400', hits: 1 },
        { target: 'client', point: 'claim.afterPlaneClaim', hits: 1 },
        // counted from the deletion: the batch carrying it (and the new run's first rows) committed, its answer never applied
        { target: 'client', point: 'drain.afterResponse', hits: 1, faultFrom: 'again' },
        { target: 'client', point: 'store.put.afterCommit', hits: 2, faultFrom: 'again' },
        { target: 'resumers', point: 'store.claim.afterCommit', hits: 1 },
        // two machines answer one pause offline (the second killed after its claim), then come back and catch up
        { target: 'double', point: 'store.claim.afterCommit', hits: 1 },
      ] as const;
      for (const [i, s] of shapes.entries()) {
        const r = await runTrial({ plane, key, dir: tmp.dir, trial: `shape-${i}`, ...s });
        // the resumer carrying the kill may lose every claim to the others: the race is the shape, the kill a bonus
        expect(r, JSON.stringify(r)).toMatchObject(
          s.target === 'resumers' ? { violations: [] } : { killed: true, violations: [] },
        );
      }
    } finally {
      await plane.stop();
    }
  }, 600_000);
});
