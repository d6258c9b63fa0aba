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

export const edgeDiskCacheEvents = new client.Counter({
  name: 'hostplane_edge_disk_cache_events_total',
  help: 'Edge disk cache of large blobs: hit (served from a file), miss (a fill started), fill (a blob written), fill_failed, eviction.',
  labelNames: ['event'] as const,
  registers: [registry],
});

/** The disk caches of this process (one per edge); the gauge sums their bytes when /metrics is read. */
export const liveDiskCaches = new Set<{ readonly bytes: number }>();

export const edgeDiskCacheBytes = new client.Gauge({
  name: 'hostplane_edge_disk_cache_bytes',
  help: 'Bytes of complete files in the edge disk cache of large blobs (this process).',
  registers: [registry],
  collect() {
    let total = 0;
    for (const cache of liveDiskCaches) total += cache.bytes;
    this.set(total);
  },
});

/** The pool of read buffers the disk cache's files are sent through (set by file-pump.ts). */
export const edgeReadBuffers: {
  pool?: { readonly idleBytes: number; readonly inUse: number; readonly bufferBytes: number };
} = {};

export const edgeReadBufferBytes = new client.Gauge({
  name: 'hostplane_edge_read_buffer_bytes',
  help: 'Read buffers of the edge disk cache (this process): idle (kept for reuse, capped) and in_use (in a read or on a socket).',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    const pool = edgeReadBuffers.pool;
    this.set({ state: 'idle' }, pool?.idleBytes ?? 0);
    this.set({ state: 'in_use' }, (pool?.inUse ?? 0) * (pool?.bufferBytes ?? 0));
  },
});

/** The open-file tables of this process's disk caches (disk-handles.ts). */
export const liveDiskHandles = new Set<{ readonly open: number; readonly inUse: number }>();

export const edgeDiskCacheOpenFiles = new client.Gauge({
  name: 'hostplane_edge_disk_cache_open_files',
  help: 'Files of the edge disk cache held open between requests (this process): idle, or in_use by a response.',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    let open = 0;
    let inUse = 0;
    for (const handles of liveDiskHandles) {
      open += handles.open;
      inUse += handles.inUse;
    }
    this.set({ state: 'idle' }, open - inUse);
    this.set({ state: 'in_use' }, inUse);
  },
});
