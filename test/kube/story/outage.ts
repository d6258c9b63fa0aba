/**
 * A real failure for the 5xx alert: the host's PostgreSQL stops while clients keep calling the
 * API. The API answers 503 (DEPENDENCY_UNAVAILABLE, Retry-After); the HostplaneHighHttp5xxRatio
 * alert goes pending and fires in the node's Prometheus, and resolves once PostgreSQL is back and
 * the 5xx have left the (story-short) window. The calls go to the api pods' IPs: their readiness
 * fails with PostgreSQL, and the Service would stop routing to them (what an ingress then answers
 * is not Hostplane's to count).
 */
import { expect } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { MINUTES, seconds, type Story } from './context.js';
import { alertResolved, watchAlert } from './monitoring.js';

const CALL_EVERY_MS = 100;

export async function databaseOutage(
  story: Story,
): Promise<{ firingAfterMs: number; resolvedAfterMs: number }> {
  const prometheus = story.prometheus!;
  const pods = (await story.pods('api')).filter((p) => p.ip);
  expect(pods.length).toBeGreaterThan(0);
  const statuses = new Map<number, number>();
  const stop = { now: false };
  const traffic = pods.map(async (pod) => {
    while (!stop.now) {
      const started = Date.now();
      const { res } = await story
        .api('/api/v1/files/list', { address: pod.ip })
        .catch(() => ({ res: { status: 0 } }));
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const wait = CALL_EVERY_MS - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  });
  let firingAfterMs = 0;
  let resolvedAfterMs = 0;
  try {
    await eventually('calls answered 200 before the outage', () => (statuses.get(200) ?? 0) >= 10);
    // Quiet first: the failover's 503s (SQLite calls while their shard was away) may still be in the window.
    await alertResolved(prometheus, 'HostplaneHighHttp5xxRatio', 3 * MINUTES);
    const downAt = Date.now();
    await story.postgres.halt('fast');
    try {
      ({ firingAfterMs } = await watchAlert(prometheus, 'HostplaneHighHttp5xxRatio', downAt, 3 * MINUTES));
      const fired = (await prometheus.alerts()).find(
        (a) => a.labels.alertname === 'HostplaneHighHttp5xxRatio',
      );
      expect(fired?.labels).toMatchObject({ role: 'api', namespace: 'hostplane' });
    } finally {
      await story.postgres.resume();
    }
    const upAt = Date.now();
    // The 503s were the dependency's, said as such: no 500 among them.
    expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(500) ?? 0).toBe(0);
    await eventually(
      'calls answered 200 again',
      async () => {
        const { res } = await story.api('/api/v1/files/list', { address: pods[0]!.ip });
        return res.status === 200;
      },
      2 * MINUTES,
    );
    await alertResolved(prometheus, 'HostplaneHighHttp5xxRatio', 3 * MINUTES);
    resolvedAfterMs = Date.now() - upAt;
    console.log(
      `[story] HostplaneHighHttp5xxRatio firing ${seconds(firingAfterMs)} s after PostgreSQL stopped, resolved ${seconds(resolvedAfterMs)} s after it was back (window 30s)`,
    );
  } finally {
    stop.now = true;
    await Promise.all(traffic);
  }
  // Every pod Ready again before the next step.
  await eventually(
    'every pod Ready again',
    async () => {
      const all = (
        await Promise.all(['api', 'edge', 'controller', 'sqlite'].map((c) => story.pods(c)))
      ).flat();
      return all.every((p) => p.ready);
    },
    3 * MINUTES,
  );
  return { firingAfterMs, resolvedAfterMs };
}
