import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // two cores: more workers only add contention to the crash and race tests
    maxWorkers: 2,
    reporters: ['default'],
  },
});
