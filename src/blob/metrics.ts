import client from 'prom-client';
import { registry } from '../observability/index.js';

export const blobOperationDuration = new client.Histogram({
  name: 'hostplane_blob_operation_duration_seconds',
  help: 'Blob store operation latency, by store kind, operation and outcome.',
  labelNames: ['store', 'operation', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});
