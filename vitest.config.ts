import { configDefaults, defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/sequencer.js';
import { FAST, tierGlobs } from './test/tiers.js';

// per project: the projects do not `extends: true` the root, which would run
// the globalSetup (a tsc build) once more for each of them
const perProject = {
  // a PGlite cold start or a child process took 40-60 s on a loaded 2-core
  // machine: the defaults leave room for that; a test that hangs still fails
  testTimeout: 180_000,
  hookTimeout: 180_000,
  pool: 'forks',
} as const;

export default defineConfig({
  test: {
    // once per run, whichever projects run; the projects see what it provides
    globalSetup: ['test/global-setup.ts'],
    // three on two cores: most files wait on child processes, fsync and HTTP, so a
    // third worker fills idle CPU (a clean-clone run alone: 19m38s with two workers,
    // 11m50s with three and the cuts of this change; both 2026-12-03). Both
    // projects share the three in one run.
    maxWorkers: 3,
    // the longest files first (test/tiers.ts START_FIRST), whatever vitest's cache holds
    sequence: { sequencer: LongFirstSequencer },
    reporters: ['default'],
    // the tiers of test/tiers.ts: `npm test` runs `fast`, `npm run test:all` both
    projects: [
      { test: { ...perProject, name: 'fast', include: tierGlobs(FAST) } },
      {
        test: {
          ...perProject,
          name: 'slow',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...tierGlobs(FAST)],
        },
      },
    ],
  },
});
