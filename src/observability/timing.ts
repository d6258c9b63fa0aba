import type { Histogram } from 'prom-client';
import { dbOperationDuration } from './metrics.js';
import { withSpan } from './tracing.js';

type Labels = Record<string, string>;

/** Times `fn` into a histogram with an `outcome` label, inside a span of the same name. */
export async function timed<T>(
  histogram: Histogram<string>,
  labels: Labels,
  spanName: string,
  fn: () => Promise<T>,
): Promise<T> {
  const end = histogram.startTimer(labels);
  try {
    const result = await withSpan(spanName, labels, fn);
    end({ outcome: 'ok' });
    return result;
  } catch (err) {
    end({ outcome: 'error' });
    throw err;
  }
}

/** Times one control-plane database operation (a query or a transaction). */
export function dbOp<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  return timed(dbOperationDuration, { operation }, `db.${operation}`, fn);
}
