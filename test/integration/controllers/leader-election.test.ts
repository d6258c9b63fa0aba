import { CoordinationV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller } from '../../../controllers/runtime/controller.js';
import { EventRecorder } from '../../../controllers/runtime/events.js';
import { reconcileTotal } from '../../../controllers/runtime/metrics.js';
import { ExponentialBackoffRateLimiter } from '../../../controllers/runtime/workqueue.js';
import { CONTROLLER_NAME } from '../../../controllers/runtime/setup.js';
import { siteReconciler } from '../../../controllers/site/reconciler.js';
import { kubeClients } from '../../../src/kube/client.js';
import type { SiteResource } from '../../../src/kube/index.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { RunningController } from '../../../src/server/index.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { serviceAccountWithRole } from '../../support/kube/envtest.js';

let fx: ClusterFixture;

beforeAll(async () => {
  fx = await startClusterFixture('leader');
}, 120_000);

afterAll(async () => {
  await fx?.stop();
});

const isReady = (site: SiteResource | undefined) =>
  site?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? site : undefined;

/** Which controller replicas recorded Events for a Site (reportingInstance is the pod name). */
async function reportingInstances(siteName: string): Promise<string[]> {
  const events = await fx.core.listNamespacedEvent({ namespace: fx.namespace });
  return [
    ...new Set(
      events.items
        .filter((e: CoreV1Event) => e.involvedObject.name === siteName)
        .map((e: CoreV1Event) => e.reportingInstance ?? ''),
    ),
  ];
}

describe('two controller replicas', () => {
  let a: RunningController;
  let b: RunningController;

  beforeAll(async () => {
    a = await fx.startController({ identity: 'controller-a' });
    b = await fx.startController({ identity: 'controller-b' });
  });

  it('elect exactly one leader, recorded in the Lease, and only the leader reconciles', async () => {
    const leader = await eventually(
      'a leader',
      () => [a, b].filter((c) => c.manager.isLeader()).length === 1,
    );
    expect(leader).toBe(true);
    const [winner, standby] = a.manager.isLeader() ? [a, b] : [b, a];
    const leases = fx.env.kubeConfig().makeApiClient(CoordinationV1Api);
    const lease = await leases.readNamespacedLease({ name: 'hostplane-controller', namespace: fx.namespace });
    const winnerId = winner === a ? 'controller-a' : 'controller-b';
    expect(lease.spec?.holderIdentity).toBe(winnerId);
    // A standby is ready (it is healthy, just waiting).
    expect(standby.manager.isReady()).toBe(true);

    await fx.sites.create({ metadata: { name: 'one' }, spec: { slug: 'one', deletionPolicy: 'Retain' } });
    await eventually('Site one to be Ready', async () => isReady(await fx.sites.get('one')));
    expect(await eventually('events for one', async () => (await reportingInstances('one')).length > 0)).toBe(
      true,
    );
    expect(await reportingInstances('one')).toEqual([winnerId]);
    expect(standby.manager.isLeader()).toBe(false);
  });

  it('hand over when the leader stops: the standby takes the Lease and reconciles', async () => {
    const [winner, standby] = a.manager.isLeader() ? [a, b] : [b, a];
    const standbyId = standby === a ? 'controller-a' : 'controller-b';
    const t0 = Date.now();
    await winner.close();
    await eventually('the standby to lead', () => standby.manager.isLeader(), 20_000);
    // The stopping leader released the Lease, so the handover does not wait for it to expire.
    expect(Date.now() - t0).toBeLessThan(15_000);

    await fx.sites.create({ metadata: { name: 'two' }, spec: { slug: 'two', deletionPolicy: 'Retain' } });
    await eventually('Site two to be Ready', async () => isReady(await fx.sites.get('two')));
    await eventually('events for two', async () => (await reportingInstances('two')).length > 0);
    expect(await reportingInstances('two')).toEqual([standbyId]);
    await standby.close();
  });
});

describe('a leader that cannot fill its caches', () => {
  it('is not ready, and after the deadline not healthy (so the pod restarts and frees the Lease)', async () => {
    // A ServiceAccount that may hold the Lease but not list Sites.
    const { token } = await serviceAccountWithRole(fx.env, fx.namespace, 'lease-only', [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
    const crippled = await fx.startController({
      identity: 'lease-only',
      token,
      kubernetes: { leaseName: 'lease-only' },
      cacheSyncDeadlineMs: 1_500,
    });
    const get = async (path: string) => (await fetch(`${crippled.url}${path}`)).status;
    await eventually('it to lead', () => crippled.manager.isLeader());
    expect(await get('/readyz')).toBe(503);
    await eventually('liveness to fail', async () => (await get('/healthz')) === 503, 10_000);
    await crippled.close();
  });
});

describe('a status write from a stale cache', () => {
  const count = async (result: string) =>
    (await reconcileTotal.get()).values.find(
      (v) => v.labels.controller === 'site-conflict' && v.labels.result === result,
    )?.value ?? 0;

  it('gets 409 Conflict from the API server, is requeued and succeeds on the retry', async () => {
    const controller = await fx.startController({ identity: 'conflict-setup' });
    await fx.sites.create({ metadata: { name: 'stale' }, spec: { slug: 'stale', deletionPolicy: 'Retain' } });
    const readySite = await eventually('Site stale to be Ready', async () =>
      isReady(await fx.sites.get('stale')),
    );
    await controller.close();

    // An old copy without status (so the reconciler wants to write one), while the live Site has
    // moved on to a newer resourceVersion.
    const stale: SiteResource = { ...readySite, status: undefined };
    const live = await fx.sites.replace({
      ...readySite,
      metadata: { ...readySite.metadata, labels: { moved: 'on' } },
    });
    const clients = kubeClients(fx.env.kubeConfig(), fx.namespace, CONTROLLER_NAME);
    const reconcilerWithCache = (get: () => SiteResource | undefined) =>
      siteReconciler({
        config: fx.controllerConfig('conflict-test'),
        platform: fx.hostplane.services.platform,
        clients,
        events: new EventRecorder(clients.core, CONTROLLER_NAME, 'conflict-test', createLogger('silent')),
        // The reconciler reads only `get` and `list` of its Site cache.
        sites: { get, list: () => [live] },
        // No Ingress cached: the reconciler reads it from the API server.
        routes: { get: () => undefined },
      });

    // The API server answers the stale write with 409; the pass asks to be requeued shortly
    // (a conflict is expected under concurrent writers: not an error).
    await expect(reconcilerWithCache(() => stale).reconcile(`${fx.namespace}/stale`)).resolves.toEqual({
      requeueAfterMs: 200,
    });

    // Through a Controller: the first pass reads the stale copy and is requeued; the retry reads
    // the live object and succeeds.
    let reads = 0;
    const [requeuesBefore, errorsBefore, successesBefore] = [
      await count('requeue'),
      await count('error'),
      await count('success'),
    ];
    const retrying = new Controller({
      name: 'site-conflict',
      reconciler: reconcilerWithCache(() => (reads++ === 0 ? stale : live)),
      logger: createLogger('silent'),
      rateLimiter: new ExponentialBackoffRateLimiter(50, 1_000),
    });
    retrying.start();
    retrying.enqueue(`${fx.namespace}/stale`);
    await eventually('a successful retry', async () => (await count('success')) > successesBefore);
    await retrying.stop();
    expect((await count('requeue')) - requeuesBefore).toBe(1);
    expect(await count('error')).toBe(errorsBefore);
    expect(reads).toBe(2);
    const site = await fx.sites.get('stale');
    expect(isReady(site)).toBeDefined();
    expect(site?.metadata.labels).toEqual({ moved: 'on' });
  });
});
