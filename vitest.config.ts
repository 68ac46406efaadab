import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // One copy of graphql: without this, vitest may load both its ESM and CJS builds, and
    // errors made by one fail `instanceof` checks of the other.
    alias: { graphql: 'graphql/index.js' },
  },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Test files of one worker share its embedded database (one PGlite per worker: each
    // costs seconds and hundreds of MB); every test seeds its own workspace.
    isolate: false,
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // Away from UTC (−03:30; the database's is +05:45, test/support/database.ts): an answer
    // that depends on the process's time zone is wrong in a test.
    env: { TZ: 'America/St_Johns' },
  },
});
