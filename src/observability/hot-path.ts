import type { Counter, Histogram, LabelValues } from 'prom-client';
import { foldBeforeCollect, httpRequestDuration, httpRequestsTotal } from './metrics.js';

// Metrics for paths that answer tens of thousands of requests a second per core (the edge, the
// fast paths): label children bound once, tallies folded into prom-client when it is read.

/** Requests of one (method, status) since the last scrape: a count, a sum and bucket counts. */
interface Tally {
  labels: { role: string; method: string; route: string; status: string };
  count: number;
  sum: number;
  buckets: Float64Array;
}

/** prom-client's per-label-set histogram state (not in its types; checked before use). */
interface HistogramEntry {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

const histogramInternals = httpRequestDuration as unknown as {
  upperBounds?: readonly number[];
  hashMap?: Record<string, HistogramEntry>;
};

/**
 * Records `hostplane_http_requests_total` and `…_duration_seconds` for one role and route at the
 * cost of a few additions per request: tallies are kept per (method, status) and folded into
 * prom-client when the metrics are read (prom-client validates and hashes labels on every call,
 * several microseconds a request on the edge's hot path).
 */
export function boundRequestMetrics(
  role: string,
  route: string,
): (method: string, status: number, seconds: number) => void {
  const bounds = histogramInternals.upperBounds ?? [];
  const tallies = new Map<string, Tally>();
  foldBeforeCollect.add(() => {
    for (const tally of tallies.values()) if (tally.count > 0) fold(tally, bounds);
  });
  return (method, status, seconds) => {
    const key = method + status;
    let tally = tallies.get(key);
    if (!tally) {
      tally = {
        labels: { role, method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Float64Array(bounds.length),
      };
      tallies.set(key, tally);
    }
    tally.count++;
    tally.sum += seconds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= (bounds[i] as number)) {
        tally.buckets[i]! += 1;
        break;
      }
    }
  };
}

function fold(tally: Tally, bounds: readonly number[]): void {
  httpRequestsTotal.inc(tally.labels, tally.count);
  const entry = histogramEntry(tally.labels);
  if (entry) {
    entry.count += tally.count;
    entry.sum += tally.sum;
    bounds.forEach(
      (bound, i) => (entry.bucketValues[bound] = (entry.bucketValues[bound] ?? 0) + tally.buckets[i]!),
    );
  } else {
    // prom-client's internals changed: one observation per request at the mean (count and sum exact).
    const mean = tally.sum / tally.count;
    for (let i = 0; i < tally.count; i++) httpRequestDuration.observe(tally.labels, mean);
  }
  tally.count = 0;
  tally.sum = 0;
  tally.buckets.fill(0);
}

/** The histogram's state for a label set, created empty (prom-client's zero()) when missing. */
function histogramEntry(labels: Tally['labels']): HistogramEntry | undefined {
  return histogramEntryOf(httpRequestDuration, labels);
}

function histogramEntryOf<T extends string>(
  histogram: Histogram<T>,
  labels: LabelValues<T>,
): HistogramEntry | undefined {
  const internals = histogram as unknown as { hashMap?: Record<string, HistogramEntry> };
  const wanted = Object.entries(labels as Record<string, unknown>).map(([k, v]) => [k, String(v)]);
  const find = () =>
    Object.values(internals.hashMap ?? {}).find((e) => wanted.every(([k, v]) => e.labels[k!] === v));
  let entry = find();
  if (!entry) {
    histogram.zero(labels);
    entry = find();
  }
  return entry && typeof entry.bucketValues === 'object' && typeof entry.sum === 'number' ? entry : undefined;
}

/**
 * A histogram child for a hot path: `observe()` adds to local buckets, folded into the histogram
 * when the metrics are read (no label validation or hashing per call).
 */
export function tallyHistogram<T extends string>(
  histogram: Histogram<T>,
  labels: LabelValues<T>,
): { observe(value: number): void } {
  const bounds = (histogram as unknown as { upperBounds?: readonly number[] }).upperBounds ?? [];
  const buckets = new Float64Array(bounds.length);
  let count = 0;
  let sum = 0;
  foldBeforeCollect.add(() => {
    if (count === 0) return;
    const entry = histogramEntryOf(histogram, labels);
    if (entry) {
      entry.count += count;
      entry.sum += sum;
      bounds.forEach(
        (bound, i) => (entry.bucketValues[bound] = (entry.bucketValues[bound] ?? 0) + buckets[i]!),
      );
    } else {
      // prom-client's internals changed: one observation per call at the mean (count and sum exact).
      for (let i = 0; i < count; i++) histogram.observe(labels, sum / count);
    }
    count = 0;
    sum = 0;
    buckets.fill(0);
  });
  return {
    observe(value) {
      count++;
      sum += value;
      for (let i = 0; i < bounds.length; i++) {
        if (value <= (bounds[i] as number)) {
          buckets[i]! += 1;
          break;
        }
      }
    },
  };
}

/**
 * A counter child for a hot path: `inc()` adds to a plain number, folded into the counter when
 * the metrics are read (no label hashing per call).
 */
export function tallyCounter<T extends string>(counter: Counter<T>, labels: LabelValues<T>): { inc(): void } {
  let pending = 0;
  foldBeforeCollect.add(() => {
    if (pending === 0) return;
    counter.inc(labels, pending);
    pending = 0;
  });
  return { inc: () => void (pending += 1) };
}
