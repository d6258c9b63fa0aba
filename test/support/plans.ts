import { plans, type Plan } from '../../src/platform/plans.js';

/**
 * Runs `fn` with the free plan's limits changed. The services run in this process and read the
 * module-level `plans` record on every request, so a test can shrink a limit instead of filling
 * 500 MB; the limits are restored whatever happens.
 */
export async function withFreeLimits(
  limits: Partial<Pick<Plan, 'maxFiles' | 'maxStorageBytes'>>,
  fn: () => Promise<void>,
) {
  const saved = { maxFiles: plans.free.maxFiles, maxStorageBytes: plans.free.maxStorageBytes };
  Object.assign(plans.free, limits);
  try {
    await fn();
  } finally {
    Object.assign(plans.free, saved);
  }
}
