import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // a PGlite cold start or a child process took 40-60 s on a loaded 2-core
    // machine: the defaults leave room for that; a test that hangs still fails
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // three on two cores: most files wait on child processes, fsync and HTTP, so a
    // third worker fills idle CPU (a clean-clone run alone: 19m38s with two workers,
    // 11m50s with three and the cuts of this change; both 2026-12-03)
    maxWorkers: 3,
    reporters: ['default'],
  },
});
