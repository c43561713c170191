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
    // two cores: more workers only add contention to the crash and race tests
    maxWorkers: 2,
    reporters: ['default'],
  },
});
