import { configDefaults, defineConfig } from 'vitest/config';

// .ci/run sets VITEST_JSON_REPORT to read the pass/fail counts from vitest's JSON reporter.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-node tests run by themselves: vitest.node.config.ts, `make test-node`.
    exclude: [...configDefaults.exclude, 'test/kube/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
