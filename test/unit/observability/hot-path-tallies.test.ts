import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { foldTallies, tallyCounter, tallyHistogram } from '../../../src/observability/index.js';

// Tallied metrics (hot paths) must read exactly like the same observations made on prom-client
// directly, once folded at collection.
describe('tallied metrics', () => {
  it('a tallied histogram and counter expose what direct observations would', async () => {
    const direct = new client.Registry();
    const tallied = new client.Registry();
    const make = (registry: client.Registry, fold: boolean) => ({
      histogram: new client.Histogram({
        name: 'test_seconds',
        help: 'h',
        labelNames: ['op'] as const,
        buckets: [0.001, 0.01, 0.1],
        registers: [registry],
        ...(fold ? { collect: foldTallies } : {}),
      }),
      counter: new client.Counter({
        name: 'test_total',
        help: 'c',
        labelNames: ['op'] as const,
        registers: [registry],
        ...(fold ? { collect: foldTallies } : {}),
      }),
    });
    const d = make(direct, false);
    const t = make(tallied, true);
    const th = { a: tallyHistogram(t.histogram, { op: 'a' }), b: tallyHistogram(t.histogram, { op: 'b' }) };
    const tc = tallyCounter(t.counter, { op: 'a' });
    const values: Array<['a' | 'b', number]> = [
      ['a', 0.0005],
      ['a', 0.001],
      ['a', 0.05],
      ['a', 3],
      ['b', 0.02],
    ];
    const observeAll = () => {
      for (const [op, v] of values) {
        d.histogram.observe({ op }, v);
        th[op].observe(v);
        if (op === 'a') {
          d.counter.inc({ op });
          tc.inc();
        }
      }
    };
    observeAll();
    expect(await tallied.metrics()).toBe(await direct.metrics());
    // A second round folds on top of the first, and reading twice adds nothing.
    observeAll();
    await tallied.metrics();
    expect(await tallied.metrics()).toBe(await direct.metrics());
  });
});
