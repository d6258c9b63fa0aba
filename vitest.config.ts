import { defineConfig } from 'vitest/config';

// .ci/run sets VITEST_JSON_REPORT to read the pass/fail counts from vitest's JSON reporter.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The chart on a real node runs on its own, after this suite: vitest.node.config.ts.
    exclude: ['test/kube/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
