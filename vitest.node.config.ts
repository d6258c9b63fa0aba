import { defineConfig } from 'vitest/config';

// The chart on a real node (test/kube/): one story that brings up its own single-node cluster
// (root, network namespaces, iptables), so it runs alone, after the main suite (`make test-node`).
// .ci/run sets VITEST_JSON_REPORT; this run's counts go to "<that file>.node" and are added in.
const jsonReport = process.env.VITEST_JSON_REPORT ? `${process.env.VITEST_JSON_REPORT}.node` : undefined;

export default defineConfig({
  test: {
    include: ['test/kube/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 10 * 60_000,
    hookTimeout: 30 * 60_000,
    pool: 'forks',
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
