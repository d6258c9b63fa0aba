import client from 'prom-client';
import { foldTallies, registry } from '../observability/index.js';

// The edge's metrics (its cache lookups are tallied per lookup and folded in when /metrics is read).

export const edgeCacheEvents = new client.Counter({
  name: 'hostplane_edge_cache_events_total',
  collect: foldTallies,
  help: 'Edge cache lookups, by cache (manifest, blob) and result (hit, miss).',
  labelNames: ['cache', 'result'] as const,
  registers: [registry],
});

export const edgeSyncWaits = new client.Counter({
  name: 'hostplane_edge_sync_waits_total',
  help: 'Edge requests that found the caches stale (sync loop behind) and waited for a shared round trip.',
  registers: [registry],
});
