/**
 * The cross-machine kill campaign (test/faults/fleet-campaign.ts), a handful
 * of trials: two or three machines and a plane, the runner SIGKILLed or
 * SIGSTOPped past its lease and continued at random points, the others
 * recovering in watch mode, some restored ahead of the fault. `npm run soak`
 * runs 200 and more of them (WAYMARK_SOAK_FLEET).
 *
 *   WAYMARK_FLEET_TRIALS   trials (default 5)
 *   WAYMARK_FLEET_SEED     the campaign's seed (default: from the clock, printed)
 *   WAYMARK_FLEET_SEEDS    replay these trials (their seeds, comma separated)
 *   WAYMARK_FLEET_BACKEND  pglite (default) or postgres
 *   WAYMARK_FLEET_VERBOSE  print every trial's event log, not only a failed one's
 */
import { describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { failureReport, progressLine, runFleetCampaign } from './fleet-campaign.js';

const SEED = Number(process.env.WAYMARK_FLEET_SEED ?? Date.now() % 100_000);
const SEEDS = (process.env.WAYMARK_FLEET_SEEDS ?? '').split(',').filter(Boolean).map(Number);
const TRIALS = SEEDS.length || Number(process.env.WAYMARK_FLEET_TRIALS ?? 5);
const BACKEND = process.env.WAYMARK_FLEET_BACKEND === 'postgres' ? 'postgres' : 'pglite';
const pg = BACKEND === 'postgres' ? await pgReady('the cross-machine kill campaign on a Postgres plane') : true;

describe.skipIf(!pg)(
  `cross-machine kill campaign: ${TRIALS} trials on ${BACKEND}, seed ${SEED} (replay one: WAYMARK_FLEET_SEEDS=<its seed>)`,
  () => {
    it(
      'no order charged twice at a service that dedupes by the effect key, none repeated whose record the plane held, every run completed on the plane and left whole, every order of it charged',
      async () => {
        const summary = await runFleetCampaign({
          trials: TRIALS,
          seed: SEED,
          seeds: SEEDS,
          backend: BACKEND,
          onTrial: (r, i, totals) => {
            console.log(progressLine(r, i, TRIALS, totals));
            if (!r.ok || process.env.WAYMARK_FLEET_VERBOSE) console.log(failureReport(r));
          },
        });
        const seeds = summary.failures.map((f) => f.seed).join(',');
        const what = `seed ${SEED}; failed trials (WAYMARK_FLEET_SEEDS=${seeds}): ${summary.failures.map((f) => `${f.seed}: ${f.violations.join('; ')}`).join(' | ')}`;
        expect.soft(summary.doubles, `double effects ${JSON.stringify(summary.doubleKinds)}; ${what}`).toBe(0);
        expect.soft(summary.stranded, `stranded runs; ${what}`).toBe(0);
        expect.soft(summary.unfinished, `runs left unfinished; ${what}`).toBe(0);
        expect.soft(summary.missing, `orders of completed runs never charged; ${what}`).toBe(0);
        expect(summary.failures.map((f) => f.seed)).toEqual([]);
      },
      240_000 + TRIALS * 75_000,
    );
  },
);
