import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../helpers/tmp.js';
import { runRecoverySoak } from './recovery-soak.js';

const tmp = scratchDir('waymark-recovery-soak-');
afterAll(() => tmp.cleanup());
const seed = Number(process.env.WAYMARK_SOAK_SEED ?? Date.now() % 1_000_000);

describe(`recovery soak, small (seed ${seed}; npm run soak runs it large)`, () => {
  it('runs killed at random points in two starters, then two recovery workers per round (one often killed): each run ends once, no turn or effect run twice by recovery, seq without gaps', async () => {
    const r = await runRecoverySoak({ runs: 6, starters: 2, maxRounds: 6, seed, dir: tmp.dir });
    console.log(`[recovery-soak] seed ${seed}: ${JSON.stringify({ ...r, violations: r.violations.length })}`);
    expect(r.violations, `replay with WAYMARK_SOAK_SEED=${seed}`).toEqual([]);
    expect(r.runs).toBeGreaterThan(0);
  }, 600_000);
});
