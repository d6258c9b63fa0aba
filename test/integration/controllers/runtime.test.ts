import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  V1MicroTime,
  type V1ConfigMap,
  type V1Lease,
} from '@kubernetes/client-node';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, eventuallyPasses } from '../../support/eventually.js';
import { Controller, objectKey, splitKey, type Reconciler } from '../../../controllers/runtime/controller.js';
import { Informer } from '../../../controllers/runtime/informer.js';
import { LeaderElector, type LeaderElectionOptions } from '../../../controllers/runtime/leader-election.js';
import { ExponentialBackoffRateLimiter } from '../../../controllers/runtime/workqueue.js';
import { createLogger } from '../../../src/observability/logger.js';
import { registry } from '../../../src/observability/metrics.js';
import { serviceAccountWithRole, startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';

// The controller runtime against a real etcd + kube-apiserver: informers through watch timeouts,
// API server restarts and 410 re-lists; Lease leader election with two candidates, release,
// expiry and lost renewals; controller workers, back-off and metrics.

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

let env: KubeTestEnv;
let core: CoreV1Api;
let leases: CoordinationV1Api;

beforeAll(async () => {
  env = await startKubeTestEnv();
  core = env.kubeConfig().makeApiClient(CoreV1Api);
  leases = env.kubeConfig().makeApiClient(CoordinationV1Api);
});

afterAll(async () => {
  await env?.stop();
});

/** The current value of a counter or gauge for exactly these labels (0 when never set). */
async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} is not registered`);
  const { values } = await metric.get();
  const sample = values.find((value) =>
    Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected),
  );
  return sample?.value ?? 0;
}

/** A KubeConfig for the admin user that reaches the API server at `server` (e.g. through a proxy). */
function kubeConfigFor(server: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'envtest', server, caData: Buffer.from(env.caPem).toString('base64') }],
    users: [{ name: 'admin', token: env.adminToken }],
    contexts: [{ name: 'envtest', cluster: 'envtest', user: 'admin' }],
    currentContext: 'envtest',
  });
  return kubeConfig;
}

/**
 * A loopback TCP proxy to the API server whose link can be cut (open connections reset, new ones
 * refused) and healed: a network partition between one client and a real server.
 */
async function startTcpProxy(
  target: URL,
): Promise<{ url: string; cut(): void; heal(): void; close(): Promise<void> }> {
  const open = new Set<Socket>();
  let isCut = false;
  const server = createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    const closeBoth = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('error', closeBoth);
      socket.on('close', closeBoth);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    cut() {
      isCut = true;
      for (const socket of open) socket.destroy();
    },
    heal() {
      isCut = false;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function createNamespace(name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
}

async function createConfigMap(namespace: string, name: string, data: Record<string, string> = {}) {
  return core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data } });
}

/** Informer events, as `event name` strings in arrival order. */
function recordEvents(informer: Informer<V1ConfigMap>): string[] {
  const events: string[] = [];
  informer.on('add', (cm) => events.push(`add ${cm.metadata?.name}`));
  informer.on('update', (cm, old) => {
    // Updates carry both versions; one with an unchanged resourceVersion is no update.
    const same = cm.metadata?.resourceVersion === old.metadata?.resourceVersion;
    events.push(`${same ? 'same-version update' : 'update'} ${cm.metadata?.name}`);
  });
  informer.on('delete', (cm) => events.push(`delete ${cm.metadata?.name}`));
  return events;
}

const namesOf = (informer: Informer<V1ConfigMap>): string[] =>
  informer
    .list()
    .map((cm) => cm.metadata?.name ?? '')
    .sort();

describe('Informer', () => {
  const namespace = 'informer';
  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  const restarts = (informer: string, reason: string): Promise<number> =>
    metricValue('hostplane_controller_watch_restarts_total', { informer, reason });

  beforeAll(async () => {
    await createNamespace(namespace);
  });

  it('lists existing objects, then sees adds, updates and deletes through the watch', async () => {
    await createConfigMap(namespace, 'one', { v: '1' });
    await createConfigMap(namespace, 'two', { v: '1' });
    const informer = new Informer<V1ConfigMap>({
      name: 'configmaps',
      kubeConfig: env.kubeConfig(),
      path,
      logger,
    });
    const events = recordEvents(informer);
    // A handler's bug must not stop the informer or the handlers after it.
    informer.on('add', () => {
      throw new Error('handler bug');
    });
    informer.on('update', async () => {
      throw new Error('async handler bug'); // would be an unhandled rejection if not caught
    });
    try {
      expect(informer.hasSynced()).toBe(false);
      await informer.start();
      expect(informer.hasSynced()).toBe(true);
      expect(namesOf(informer)).toEqual(['one', 'two']);
      expect(events.sort()).toEqual(['add one', 'add two']);
      const one = informer.get(namespace, 'one');
      expect(one?.data).toEqual({ v: '1' });
      expect(one?.kind).toBe('ConfigMap');
      expect(informer.get(namespace, 'missing')).toBeUndefined();

      events.length = 0;
      await createConfigMap(namespace, 'three');
      await core.patchNamespacedConfigMap({
        namespace,
        name: 'one',
        body: [{ op: 'replace', path: '/data/v', value: '2' }],
      });
      await core.deleteNamespacedConfigMap({ namespace, name: 'two' });
      await eventuallyPasses('the watch events', () =>
        expect(events).toEqual(['add three', 'update one', 'delete two']),
      );
      expect(informer.get(namespace, 'one')?.data).toEqual({ v: '2' });
      expect(namesOf(informer)).toEqual(['one', 'three']);
    } finally {
      await informer.stop();
    }
    // Stopped: its watch is closed (kube-apiserver would otherwise wait for it when restarted).
  });

  it('recovers from a partition across an API server restart, re-listing on 410 and missing nothing', async () => {
    // The informer reaches the API server through a proxy that is cut, then the server restarts,
    // then the link heals: the informer surely missed the writes in between, and the restarted
    // server's fresh watch cache answers the old resourceVersion with "410 Gone".
    const proxy = await startTcpProxy(new URL(env.server));
    const informer = new Informer<V1ConfigMap>({
      name: 'configmaps-partitioned',
      kubeConfig: kubeConfigFor(proxy.url),
      path,
      logger,
    });
    const events = recordEvents(informer);
    try {
      // Untouched throughout: the re-list must not report it as updated.
      await createConfigMap(namespace, 'steady');
      await informer.start();
      expect(namesOf(informer)).toEqual(['one', 'steady', 'three']);
      events.length = 0;

      proxy.cut();
      await createConfigMap(namespace, 'written-while-cut-off');
      await createConfigMap(namespace, 'short-lived');
      await core.deleteNamespacedConfigMap({ namespace, name: 'short-lived' });
      await core.deleteNamespacedConfigMap({ namespace, name: 'three' });
      await env.restartApiServer();
      // Right after the restart, before the informer is back.
      await createConfigMap(namespace, 'written-after-restart');
      await core.patchNamespacedConfigMap({
        namespace,
        name: 'one',
        body: [{ op: 'replace', path: '/data/v', value: '3' }],
      });
      expect(await restarts('configmaps-partitioned', 'error')).toBeGreaterThan(0);
      expect(await restarts('configmaps-partitioned', 'relist_410')).toBe(0);
      proxy.heal();

      await eventuallyPasses(
        'the cache to reflect every write',
        () => {
          expect(namesOf(informer)).toEqual([
            'one',
            'steady',
            'written-after-restart',
            'written-while-cut-off',
          ]);
          expect(informer.get(namespace, 'one')?.data).toEqual({ v: '3' });
        },
        20_000,
      );
      // From the re-list: each change exactly once, nothing for the unchanged object, nothing for
      // the one that came and went while the informer was cut off.
      expect(events.sort()).toEqual([
        'add written-after-restart',
        'add written-while-cut-off',
        'delete three',
        'update one',
      ]);
      expect(await restarts('configmaps-partitioned', 'relist_410')).toBe(1);

      // And the new watch works.
      events.length = 0;
      await createConfigMap(namespace, 'after-recovery');
      await eventuallyPasses('the new watch to deliver', () =>
        expect(events).toEqual(['add after-recovery']),
      );
    } finally {
      await informer.stop();
      await proxy.close();
    }
  }, 40_000);

  it('pages through large lists and honours the label selector', async () => {
    const bulk = 'informer-bulk';
    await createNamespace(bulk);
    const total = 520; // more than one page of 500
    const names = Array.from({ length: total }, (_, i) => `cm-${String(i).padStart(3, '0')}`);
    for (let start = 0; start < total; start += 40) {
      await Promise.all(
        names.slice(start, start + 40).map((name, i) =>
          core.createNamespacedConfigMap({
            namespace: bulk,
            body: { metadata: { name, labels: { parity: (start + i) % 2 === 0 ? 'even' : 'odd' } } },
          }),
        ),
      );
    }
    const all = new Informer<V1ConfigMap>({
      name: 'bulk',
      kubeConfig: env.kubeConfig(),
      path: `/api/v1/namespaces/${bulk}/configmaps`,
      logger,
    });
    const even = new Informer<V1ConfigMap>({
      name: 'bulk-even',
      kubeConfig: env.kubeConfig(),
      path: `/api/v1/namespaces/${bulk}/configmaps`,
      labelSelector: 'parity=even',
      logger,
    });
    try {
      await Promise.all([all.start(), even.start()]);
      expect(namesOf(all)).toEqual(names);
      expect(even.list()).toHaveLength(total / 2);
      expect(even.list().every((cm) => cm.metadata?.labels?.parity === 'even')).toBe(true);

      await core.createNamespacedConfigMap({
        namespace: bulk,
        body: { metadata: { name: 'late-odd', labels: { parity: 'odd' } } },
      });
      await core.createNamespacedConfigMap({
        namespace: bulk,
        body: { metadata: { name: 'late-even', labels: { parity: 'even' } } },
      });
      await eventuallyPasses('the late even one to arrive', () =>
        expect(even.get(bulk, 'late-even')).toBeDefined(),
      );
      await eventuallyPasses('the late odd one to arrive', () =>
        expect(all.get(bulk, 'late-odd')).toBeDefined(),
      );
      expect(even.get(bulk, 'late-odd')).toBeUndefined();
    } finally {
      await Promise.all([all.stop(), even.stop()]);
    }
  });

  it('stop() ends an informer that is still retrying its first list', async () => {
    const unreachable = env.kubeConfig('not-a-valid-token'); // 401 on every list
    const informer = new Informer<V1ConfigMap>({
      name: 'unauthorized',
      kubeConfig: unreachable,
      path,
      logger,
    });
    const started = informer.start();
    await eventuallyPasses('a failed list to be counted', async () =>
      expect(await restarts('unauthorized', 'error')).toBeGreaterThan(0),
    );
    await informer.stop();
    await started;
    expect(informer.hasSynced()).toBe(false);
  });
});

describe('LeaderElector', () => {
  const namespace = 'leader-election';
  const running: LeaderElector[] = [];

  beforeAll(async () => {
    await createNamespace(namespace);
  });

  afterAll(async () => {
    await Promise.all(running.map((elector) => elector.stop()));
  });

  /** How many candidates of one lease are leading right now, and the most there ever were. */
  const leadership = new Map<string, { now: number; most: number }>();

  interface Candidate {
    elector: LeaderElector;
    /** onStartedLeading / onStoppedLeading calls so far. */
    calls: { started: number; stopped: number };
  }

  function candidate(
    identity: string,
    options: Partial<LeaderElectionOptions> & Pick<LeaderElectionOptions, 'leaseName'>,
  ): Candidate {
    const calls = { started: 0, stopped: 0 };
    const lease = leadership.get(options.leaseName) ?? { now: 0, most: 0 };
    leadership.set(options.leaseName, lease);
    const elector = new LeaderElector({
      kubeConfig: env.kubeConfig(),
      namespace,
      identity,
      leaseDurationSeconds: 3,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 300,
      logger,
      onStartedLeading: () => {
        calls.started++;
        lease.now++;
        lease.most = Math.max(lease.most, lease.now);
      },
      onStoppedLeading: () => {
        calls.stopped++;
        lease.now--;
      },
      ...options,
    });
    running.push(elector);
    return { elector, calls };
  }

  const readLease = (name: string): Promise<V1Lease> => leases.readNamespacedLease({ name, namespace });
  const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

  it('elects exactly one of two candidates, and a released lease passes to the other at once', async () => {
    // A long lease: a takeover within seconds can only come from the release.
    const options = { leaseName: 'two-candidates', leaseDurationSeconds: 30 };
    const a = candidate('candidate-a', options);
    const b = candidate('candidate-b', options);
    a.elector.start();
    b.elector.start();

    const leader = await eventually('a leader', () => {
      const leaders = [a, b].filter((c) => c.elector.isLeader());
      expect(leaders).toHaveLength(1);
      return leaders[0]!;
    });
    const follower = leader === a ? b : a;
    const identityOf = (c: Candidate): string => (c === a ? 'candidate-a' : 'candidate-b');
    expect(leader.calls).toEqual({ started: 1, stopped: 0 });
    expect(follower.calls).toEqual({ started: 0, stopped: 0 });

    const lease = await readLease('two-candidates');
    expect(lease.spec?.holderIdentity).toBe(identityOf(leader));
    expect(lease.spec?.leaseDurationSeconds).toBe(30);
    expect(lease.spec?.leaseTransitions).toBe(0);
    expect(String(lease.spec?.renewTime)).toMatch(MICRO_TIME);
    expect(String(lease.spec?.acquireTime)).toMatch(MICRO_TIME);
    // The leader keeps renewing: renewTime moves, the holder and acquireTime stay.
    await eventuallyPasses('a renewal', async () => {
      const renewed = await readLease('two-candidates');
      expect(renewed.spec?.holderIdentity).toBe(identityOf(leader));
      expect(String(renewed.spec?.renewTime)).not.toBe(String(lease.spec?.renewTime));
      expect(String(renewed.spec?.acquireTime)).toBe(String(lease.spec?.acquireTime));
    });
    expect(follower.elector.isLeader()).toBe(false);

    const releasedAt = Date.now();
    await leader.elector.stop();
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.calls).toEqual({ started: 1, stopped: 1 });
    await eventuallyPasses(
      'the follower to take over',
      () => expect(follower.elector.isLeader()).toBe(true),
      5_000,
    );
    expect(Date.now() - releasedAt).toBeLessThan(5_000);
    expect(follower.calls).toEqual({ started: 1, stopped: 0 });
    const taken = await readLease('two-candidates');
    expect(taken.spec?.holderIdentity).toBe(identityOf(follower));
    expect(taken.spec?.leaseTransitions).toBe(1);
    expect(taken.spec?.leaseDurationSeconds).toBe(30);
    expect(leadership.get('two-candidates')?.most).toBe(1);
  });

  it('takes over an abandoned lease once it has seen it unchanged for the lease duration', async () => {
    // The holder crashed long ago by the wall clock; but clocks of different machines are not
    // compared: a newcomer waits a full lease duration of its own time.
    await leases.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: 'abandoned', namespace },
        spec: {
          holderIdentity: 'crashed-pod',
          leaseDurationSeconds: 2,
          leaseTransitions: 4,
          acquireTime: new V1MicroTime('2000-01-01T00:00:00Z'),
          renewTime: new V1MicroTime('2000-01-01T00:00:00Z'),
        },
      },
    });
    const successor = candidate('successor', { leaseName: 'abandoned' });
    const startedAt = Date.now();
    successor.elector.start();
    await eventuallyPasses(
      'the successor to lead',
      () => expect(successor.elector.isLeader()).toBe(true),
      8_000,
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_900);
    const lease = await readLease('abandoned');
    expect(lease.spec?.holderIdentity).toBe('successor');
    expect(lease.spec?.leaseTransitions).toBe(5);
    expect(lease.spec?.leaseDurationSeconds).toBe(3);
    expect(await metricValue('hostplane_controller_leader', { lease: 'abandoned' })).toBe(1);
  });

  it('a leader that stops without releasing (like a crash) is succeeded once the lease expires', async () => {
    const first = candidate('first', { leaseName: 'crash', releaseOnStop: false });
    first.elector.start();
    await eventuallyPasses('the first to lead', () => expect(first.elector.isLeader()).toBe(true));
    const second = candidate('second', { leaseName: 'crash' });
    second.elector.start();

    const stoppedAt = Date.now();
    await first.elector.stop();
    expect(first.calls).toEqual({ started: 1, stopped: 1 });
    expect((await readLease('crash')).spec?.holderIdentity).toBe('first');
    await eventuallyPasses('the second to lead', () => expect(second.elector.isLeader()).toBe(true), 8_000);
    // It last saw the lease change at most one retry period before the stop, and waits 3 s from then.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(2_500);
    expect((await readLease('crash')).spec?.holderIdentity).toBe('second');
    expect(leadership.get('crash')?.most).toBe(1);
  });

  it('stops leading when renewals fail for longer than the renew deadline, then runs for it again', async () => {
    // A service account whose right to write Leases can be taken away and given back.
    const rbac = env.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const { token, roleBinding: binding } = await serviceAccountWithRole(env, namespace, 'elector', [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);

    const leader = candidate('rbac-leader', {
      leaseName: 'revocable',
      kubeConfig: env.kubeConfig(token),
      leaseDurationSeconds: 4,
      renewDeadlineMs: 1_500,
      retryPeriodMs: 300,
    });
    leader.elector.start();
    await eventuallyPasses('the leader to lead', () => expect(leader.elector.isLeader()).toBe(true));

    const revokedAt = Date.now();
    await rbac.deleteNamespacedRoleBinding({ namespace, name: binding.metadata?.name ?? '' });
    await eventuallyPasses(
      'leadership to be given up',
      () => expect(leader.elector.isLeader()).toBe(false),
      6_000,
    );
    expect(Date.now() - revokedAt).toBeGreaterThanOrEqual(1_200);
    expect(leader.calls).toEqual({ started: 1, stopped: 1 });
    expect(await metricValue('hostplane_controller_leader', { lease: 'revocable' })).toBe(0);

    // Back in candidacy: with its rights restored it takes the lease again (it is still the holder).
    await rbac.createNamespacedRoleBinding({ namespace, body: binding });
    await eventuallyPasses(
      'the leader to lead again',
      () => expect(leader.elector.isLeader()).toBe(true),
      6_000,
    );
    expect(leader.calls).toEqual({ started: 2, stopped: 1 });
  });

  it('rejects timings that would let a leader act after others took over', () => {
    const base = {
      kubeConfig: env.kubeConfig(),
      namespace,
      leaseName: 'invalid',
      identity: 'x',
      logger,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    };
    expect(() => new LeaderElector({ ...base, leaseDurationSeconds: 2, renewDeadlineMs: 2_000 })).toThrow(
      /leaseDurationSeconds/,
    );
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 1_000, retryPeriodMs: 1_000 })).toThrow(
      /renewDeadlineMs/,
    );
  });
});

describe('Controller', () => {
  const reconciles = (controller: string, result: 'success' | 'error' | 'requeue'): Promise<number> =>
    metricValue('hostplane_controller_reconcile_total', { controller, result });

  /** A promise with its resolve function, to hold a reconcile until the test lets it go. */
  function gate(): { promise: Promise<void>; open: () => void } {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    return { promise, open };
  }

  it('has object keys of namespace/name', () => {
    expect(objectKey({ metadata: { namespace: 'ns', name: 'a' } })).toBe('ns/a');
    expect(objectKey({ metadata: { name: 'cluster-wide' } })).toBe('cluster-wide');
    expect(splitKey('ns/a')).toEqual({ namespace: 'ns', name: 'a' });
    expect(splitKey('cluster-wide')).toEqual({ namespace: undefined, name: 'cluster-wide' });
    expect(() => splitKey('a/b/c')).toThrow(/invalid object key/);
    expect(() => splitKey('ns/')).toThrow(/invalid object key/);
  });

  it('reconciles a key added many times during its reconcile exactly once more, never concurrently', async () => {
    let calls = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    const first = gate();
    const firstStarted = gate();
    const reconciler: Reconciler = {
      async reconcile() {
        calls++;
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
        if (calls === 1) {
          firstStarted.open();
          await first.promise;
        }
        inFlight--;
      },
    };
    const controller = new Controller({ name: 'dedupe', reconciler, workers: 4, logger });
    controller.start();
    controller.enqueue('ns/a');
    await firstStarted.promise;
    for (let i = 0; i < 20; i++) controller.enqueue('ns/a');
    expect(controller.queue.len()).toBe(0); // held back until the running reconcile is done
    first.open();
    await eventually('the second reconcile', () => calls === 2 && inFlight === 0);
    // Its done() found the key clean: nothing more is queued, so there will be no third.
    expect(controller.queue.len()).toBe(0);
    await controller.stop();
    expect(calls).toBe(2);
    expect(mostInFlight).toBe(1);
    expect(await reconciles('dedupe', 'success')).toBe(2);
  });

  it('retries a failing reconcile with growing delays, and forgets the failures on success', async () => {
    const attempts: number[] = [];
    const reconciler: Reconciler = {
      async reconcile() {
        attempts.push(performance.now());
        if (attempts.length <= 4) throw new Error('not ready yet');
      },
    };
    const controller = new Controller({
      name: 'backoff',
      reconciler,
      workers: 1,
      rateLimiter: new ExponentialBackoffRateLimiter(50, 10_000),
      logger,
    });
    controller.start();
    controller.enqueue('ns/flaky');
    await eventuallyPasses('the fifth attempt to succeed', async () =>
      expect(await reconciles('backoff', 'success')).toBe(1),
    );
    await controller.stop();
    expect(attempts).toHaveLength(5);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
    // 50, 100, 200, 400 ms at least (timers never fire early by more than rounding).
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(50 * 2 ** i - 2));
    expect(await reconciles('backoff', 'error')).toBe(4);
    expect(controller.queue.numRequeues('ns/flaky')).toBe(0);
  });

  it('requeues after requeueAfterMs', async () => {
    const attempts: number[] = [];
    const reconciler: Reconciler = {
      async reconcile() {
        attempts.push(performance.now());
        return attempts.length === 1 ? { requeueAfterMs: 150 } : undefined;
      },
    };
    const controller = new Controller({ name: 'requeue', reconciler, logger });
    controller.start();
    controller.enqueue('ns/poll');
    await eventuallyPasses('the requeued reconcile', async () =>
      expect(await reconciles('requeue', 'success')).toBe(1),
    );
    await controller.stop();
    expect(attempts).toHaveLength(2);
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(148);
    expect(await reconciles('requeue', 'requeue')).toBe(1);
  });

  it('reports the queue depth, and stop() waits for the reconcile in flight', async () => {
    const held = gate();
    const started = gate();
    const seen: string[] = [];
    const reconciler: Reconciler = {
      async reconcile(key) {
        seen.push(key);
        started.open();
        await held.promise;
      },
    };
    const controller = new Controller({ name: 'stopping', reconciler, workers: 1, logger });
    controller.start();
    controller.enqueue('ns/a');
    await started.promise;
    controller.enqueue('ns/b');
    controller.enqueue('ns/c');
    expect(await metricValue('hostplane_controller_queue_depth', { controller: 'stopping' })).toBe(2);

    let stopped = false;
    const stopping = controller.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    held.open();
    await stopping;
    // Keys still queued at shutdown are dropped: controllers resync when they start again.
    expect(seen).toEqual(['ns/a']);
  });

  it('reconciles what informer events enqueue, reading the informer cache', async () => {
    const namespace = 'controller';
    await createNamespace(namespace);
    const informer = new Informer<V1ConfigMap>({
      name: 'controller-configmaps',
      kubeConfig: env.kubeConfig(),
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      logger,
    });
    const observed: string[] = [];
    const reconciler: Reconciler = {
      async reconcile(key) {
        const { namespace: ns, name } = splitKey(key);
        const configMap = informer.get(ns, name);
        observed.push(`${key}=${configMap ? configMap.data?.v : 'gone'}`);
      },
    };
    const controller = new Controller({ name: 'configmaps', reconciler, logger });
    const enqueue = (cm: V1ConfigMap): void => controller.enqueue(objectKey(cm));
    informer.on('add', enqueue);
    informer.on('update', enqueue);
    informer.on('delete', enqueue);
    try {
      await informer.start();
      controller.start();
      await createConfigMap(namespace, 'settings', { v: '1' });
      await eventuallyPasses('the add', () => expect(observed).toContain('controller/settings=1'));
      await core.patchNamespacedConfigMap({
        namespace,
        name: 'settings',
        body: [{ op: 'replace', path: '/data/v', value: '2' }],
      });
      await eventuallyPasses('the update', () => expect(observed).toContain('controller/settings=2'));
      await core.deleteNamespacedConfigMap({ namespace, name: 'settings' });
      await eventuallyPasses('the delete', () => expect(observed).toContain('controller/settings=gone'));
    } finally {
      await controller.stop();
      await informer.stop();
    }
  });
});
