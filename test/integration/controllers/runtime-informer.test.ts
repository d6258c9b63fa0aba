import { KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventuallyPasses } from '../../support/eventually.js';
import { Informer } from '../../../controllers/runtime/informer.js';
import {
  core,
  createConfigMap,
  createNamespace,
  env,
  logger,
  metricValue,
  useKubeTestEnv,
} from './runtime-support.js';

// The controller runtime's Informer against a real etcd + kube-apiserver: list then watch, watch
// restarts across a network partition and an API server restart (re-listing on 410), paged lists
// and label selectors, stopping while the first list still fails. The tests share one namespace
// and build on each other's ConfigMaps: they run in order, in this one file.

useKubeTestEnv();

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
