import { AppError } from '../errors/index.js';
import { formatBytes, percentage, type SiteUsage } from '../platform/index.js';
import { quotaRejectionsTotal } from './metrics.js';

/** The warning flags of storage-limits turn on at this share of a limit (spec 2.9). */
export const NEAR_LIMIT_PERCENT = 80;

/** Refuses a change that would take the site over its plan's file or storage limit (403 bodies of spec 7). */
export function assertWithinQuota(
  usage: SiteUsage,
  upgradeUrl: string,
  filesDelta: number,
  bytesDelta: number,
): void {
  const { site, plan } = usage;
  if (filesDelta > 0 && plan.maxFiles !== null && site.fileCount + filesDelta > plan.maxFiles) {
    quotaRejectionsTotal.inc({ limit: 'files' });
    throw new AppError('FILE_LIMIT', {
      message: `Your ${plan.name} plan allows ${plan.maxFiles} files and this site has ${site.fileCount}. Delete files or upgrade your plan.`,
      current: site.fileCount,
      limit: plan.maxFiles,
      plan: plan.type,
      upgradeUrl: upgradeUrl,
    });
  }
  if (
    bytesDelta > 0 &&
    plan.maxStorageBytes !== null &&
    site.storageBytes + bytesDelta > plan.maxStorageBytes
  ) {
    quotaRejectionsTotal.inc({ limit: 'storage' });
    const available = Math.max(0, plan.maxStorageBytes - site.storageBytes);
    throw new AppError('STORAGE_LIMIT', {
      message: `This upload needs ${formatBytes(bytesDelta)} but only ${formatBytes(available)} of your ${plan.name} plan's ${formatBytes(plan.maxStorageBytes)} is available.`,
      current: site.storageBytes,
      limit: plan.maxStorageBytes,
      limitFormatted: formatBytes(plan.maxStorageBytes),
      currentFormatted: formatBytes(site.storageBytes),
      available,
      availableFormatted: formatBytes(available),
      plan: plan.type,
      upgradeUrl: upgradeUrl,
    });
  }
}

/**
 * The usage, limits and warnings of GET /api/v1/files/storage-limits (null limits: unlimited);
 * `rollback` (beyond the spec) is what the deploys kept for rollback hold against their bound.
 */
export function storageLimits(
  { site, plan }: SiteUsage,
  rollback: { bytes: number; deploys: number; limit: number | null },
) {
  const { fileCount, storageBytes } = site;
  const filesAvailable = plan.maxFiles === null ? null : Math.max(0, plan.maxFiles - fileCount);
  const bytesAvailable =
    plan.maxStorageBytes === null ? null : Math.max(0, plan.maxStorageBytes - storageBytes);
  const filesPct = percentage(fileCount, plan.maxFiles);
  const bytesPct = percentage(storageBytes, plan.maxStorageBytes);
  return {
    plan: { name: plan.name, type: plan.type },
    usage: {
      files: { current: fileCount, limit: plan.maxFiles, available: filesAvailable, percentage: filesPct },
      storage: {
        current: storageBytes,
        limit: plan.maxStorageBytes,
        available: bytesAvailable,
        current_formatted: formatBytes(storageBytes),
        limit_formatted: plan.maxStorageBytes === null ? 'Unlimited' : formatBytes(plan.maxStorageBytes),
        available_formatted: bytesAvailable === null ? 'Unlimited' : formatBytes(bytesAvailable),
        percentage: bytesPct,
      },
    },
    rollback: {
      current: rollback.bytes,
      limit: rollback.limit,
      current_formatted: formatBytes(rollback.bytes),
      limit_formatted: rollback.limit === null ? 'Unlimited' : formatBytes(rollback.limit),
      deploys: rollback.deploys,
    },
    warnings: {
      files_near_limit: filesPct >= NEAR_LIMIT_PERCENT,
      storage_near_limit: bytesPct >= NEAR_LIMIT_PERCENT,
    },
  };
}

/**
 * Refuses bytes that would take the site's unpublished deploys (uploading, ready and drafts, all
 * servable at preview hosts once finalized) past the plan's storage limit, counted apart from the
 * live set: a deploy's own set must fit the plan, and open drafts cannot hold more than it either.
 */
export function assertPendingWithinStorage(
  usage: SiteUsage,
  upgradeUrl: string,
  pendingBytes: number,
  bytesDelta: number,
): void {
  const { plan } = usage;
  if (bytesDelta <= 0 || plan.maxStorageBytes === null || pendingBytes + bytesDelta <= plan.maxStorageBytes)
    return;
  quotaRejectionsTotal.inc({ limit: 'storage' });
  const available = Math.max(0, plan.maxStorageBytes - pendingBytes);
  throw new AppError('STORAGE_LIMIT', {
    message: `This upload needs ${formatBytes(bytesDelta)} but unpublished deploys (drafts and unfinished ones) may hold only ${formatBytes(plan.maxStorageBytes)} on your ${plan.name} plan, and ${formatBytes(available)} of it is free. Publish or replace drafts (older ones are pruned), or upgrade your plan.`,
    current: pendingBytes,
    limit: plan.maxStorageBytes,
    limitFormatted: formatBytes(plan.maxStorageBytes),
    currentFormatted: formatBytes(pendingBytes),
    available,
    availableFormatted: formatBytes(available),
    plan: plan.type,
    upgradeUrl: upgradeUrl,
  });
}
