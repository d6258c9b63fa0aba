import client from 'prom-client';
import { registry } from '../observability/index.js';

/**
 * How uploads and the orphan-blob sweeper met on a blob: sweeper claimed / deleted / skipped
 * (referenced, or claimed by another sweeper) / deadline passed (the delete was not sent in time, or
 * was aborted at its deadline: the blob stays for a later sweep); an upload waited for a claim or
 * rewrote its bytes because a sweeper claimed them after it wrote them.
 */
export const blobClaimEventsTotal = new client.Counter({
  name: 'hostplane_blob_claim_events_total',
  help: 'Meetings of uploads and the orphan-blob sweeper on a blob, by event.',
  labelNames: ['event'] as const,
  registers: [registry],
});

/** Site counters the periodic recount found wrong and corrected (files/counters.ts), by counter. */
export const counterCorrectionsTotal = new client.Counter({
  name: 'hostplane_files_counter_corrections_total',
  help: 'Site file counters found wrong by the periodic recount and corrected, by counter.',
  labelNames: ['counter'] as const,
  registers: [registry],
});

export const quotaRejectionsTotal = new client.Counter({
  name: 'hostplane_quota_rejections_total',
  help: 'Writes refused because a plan limit would be exceeded, by limit.',
  labelNames: ['limit'] as const,
  registers: [registry],
});

/** Deploy events (files/deploys.ts): created, create_replayed (an Idempotency-Key's repeat), blob_uploaded, finalized_draft, finalize, publish, restore, pruned, abandoned. */
export const deployEventsTotal = new client.Counter({
  name: 'hostplane_deploy_events_total',
  help: 'Deploys created (or answered again for their Idempotency-Key: create_replayed), blobs uploaded to them, switches (finalize, publish, restore), drafts finalized, deploys pruned or abandoned, by event.',
  labelNames: ['event'] as const,
  registers: [registry],
});

/** How long a switch waited after its commit before returning (files/deploys.ts), by outcome. */
export const deploySwitchWaitSeconds = new client.Histogram({
  name: 'hostplane_deploy_switch_wait_seconds',
  help: 'Time a deploy switch (finalize, publish, restore) waited after its commit until every edge replica serves it: acked (every live edge process acknowledged) or fallback (one did not answer in time: the sync window).',
  labelNames: ['outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});
