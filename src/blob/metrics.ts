import client from 'prom-client';
import { registry } from '../observability/index.js';

export const blobOperationDuration = new client.Histogram({
  name: 'hostplane_blob_operation_duration_seconds',
  help: 'Blob store operation latency, by store kind, operation and outcome.',
  labelNames: ['store', 'operation', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const smallBlobBusyRetries = new client.Counter({
  name: 'hostplane_small_blob_busy_retries_total',
  help: "Writes to the small objects' database retried because another connection held its write lock, by operation (put, copy, delete).",
  labelNames: ['operation'] as const,
  registers: [registry],
});

export const smallBlobCheckpoints = new client.Counter({
  name: 'hostplane_small_blob_checkpoints_total',
  help: "WAL checkpoints of the small objects' database, by outcome (ok: by its worker thread; failed; fallback: on the main thread, after the worker failed 3 times in a row, until a try of it after a cool-down of 1 min, doubling up to 30 min, works).",
  labelNames: ['outcome'] as const,
  registers: [registry],
});
