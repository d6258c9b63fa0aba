import { defineConfig } from 'vitest/config';

// The real-node tests (test/kube/): they need root, start a kubelet with containerd and take
// minutes, so they run by themselves (`make test-node`), one file at a time, not in `make test`.
export default defineConfig({
  test: {
    include: ['test/kube/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 360_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
