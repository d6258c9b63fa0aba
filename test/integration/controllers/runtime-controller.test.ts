import { type V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { eventually, eventuallyPasses } from '../../support/eventually.js';
import { Controller, objectKey, splitKey, type Reconciler } from '../../../controllers/runtime/controller.js';
import { Informer } from '../../../controllers/runtime/informer.js';
import { ExponentialBackoffRateLimiter } from '../../../controllers/runtime/workqueue.js';
import {
  core,
  createConfigMap,
  createNamespace,
  env,
  logger,
  metricValue,
  useKubeTestEnv,
} from './runtime-support.js';

// The controller runtime's Controller: object keys, one reconcile per key at a time however often
// it is enqueued, back-off on errors, requeueAfterMs, queue depth and a stop() that waits for the
// reconcile in flight, and (against a real kube-apiserver) reconciles fed by informer events.

useKubeTestEnv();

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
