import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ResyncTracker } from '../../../controllers/runtime/controller-set.js';
import {
  condition,
  ensureFinalizer,
  isBeingDeleted,
  writeStatusIfChanged,
} from '../../../controllers/runtime/reconcile-helpers.js';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  watchPrimary,
} from '../../../controllers/runtime/predicates.js';
import type { Informer } from '../../../controllers/runtime/informer.js';
import { SharedInformers } from '../../../controllers/runtime/shared-informers.js';
import type { ResourceClient } from '../../../src/kube/client.js';
import type { SiteResource, SiteStatus } from '../../../src/kube/index.js';
import { createLogger } from '../../../src/observability/logger.js';

const site = (generation: number, status?: SiteStatus): SiteResource => ({
  apiVersion: 'hostplane.dev/v1alpha1',
  kind: 'Site',
  metadata: { name: 'blog', namespace: 'ns', generation, resourceVersion: '7' },
  spec: { slug: 'blog', deletionPolicy: 'Retain' },
  status,
});

/** A Site client that records its writes instead of making them. */
function recordingClient() {
  const statuses: SiteStatus[] = [];
  const patches: unknown[] = [];
  const client = {
    async replaceStatus(resource: SiteResource, status: SiteStatus) {
      statuses.push(status);
      return { ...resource, status };
    },
    async addFinalizer(resource: SiteResource, finalizer: string) {
      patches.push(finalizer);
      return resource;
    },
  } as unknown as ResourceClient<SiteResource>;
  return { client, statuses, patches };
}

describe('conditions', () => {
  it('carry the generation they describe and keep lastTransitionTime while the status holds', () => {
    const first = condition(site(1), 'Ready', 'False', 'SlugTaken', 'taken');
    expect(first).toMatchObject({
      type: 'Ready',
      status: 'False',
      observedGeneration: 1,
      reason: 'SlugTaken',
    });
    expect(first.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const old = { ...first, lastTransitionTime: '2020-01-01T00:00:00Z' };
    const stillFalse = condition(site(2, { conditions: [old] }), 'Ready', 'False', 'DomainTaken', 'x');
    expect(stillFalse).toMatchObject({ observedGeneration: 2, lastTransitionTime: '2020-01-01T00:00:00Z' });
    const flipped = condition(site(2, { conditions: [old] }), 'Ready', 'True', 'Reconciled', 'ok');
    expect(flipped.lastTransitionTime).not.toBe('2020-01-01T00:00:00Z');
  });
});

describe('writeStatusIfChanged', () => {
  it('writes a changed status stamped with the generation, and nothing when it is unchanged', async () => {
    const { client, statuses } = recordingClient();
    const ready = condition(site(3), 'Ready', 'True', 'Reconciled', 'ok');
    expect(
      await writeStatusIfChanged(client, site(3), { conditions: [ready], siteId: 4, url: undefined }),
    ).toBe(true);
    expect(statuses).toEqual([{ conditions: [ready], siteId: 4, observedGeneration: 3 }]);

    // Same content in another key order, undefined fields dropped: no write.
    const current = site(3, { siteId: 4, observedGeneration: 3, conditions: [ready] });
    expect(await writeStatusIfChanged(client, current, { siteId: 4, conditions: [ready] })).toBe(false);
    // A new generation alone is a change (observedGeneration moves on).
    expect(
      await writeStatusIfChanged(
        client,
        { ...current, metadata: { ...current.metadata, generation: 4 } },
        {
          siteId: 4,
          conditions: [ready],
        },
      ),
    ).toBe(true);
    expect(statuses).toHaveLength(2);
  });
});

describe('finalizers', () => {
  it('are added once, and a deletion is recognised', async () => {
    const { client, patches } = recordingClient();
    expect(await ensureFinalizer(client, site(1), 'x/cleanup')).toBe(true);
    const withFinalizer = site(1);
    withFinalizer.metadata.finalizers = ['x/cleanup'];
    expect(await ensureFinalizer(client, withFinalizer, 'x/cleanup')).toBe(false);
    expect(patches).toEqual(['x/cleanup']);
    expect(isBeingDeleted(withFinalizer)).toBe(false);
    withFinalizer.metadata.deletionTimestamp = new Date();
    expect(isBeingDeleted(withFinalizer)).toBe(true);
  });
});

describe('update predicates', () => {
  it('let a spec, deletion, finalizer or annotation change through, not a status write', () => {
    const changed = anyOf<SiteResource>(generationChanged, deletionOrFinalizersChanged, annotationsChanged);
    const old = site(3);
    const meta = old.metadata;
    expect(changed({ ...old, status: { observedGeneration: 3 } }, old)).toBe(false);
    expect(changed({ ...old, metadata: { ...meta, resourceVersion: '8' } }, old)).toBe(false);
    expect(changed(site(4), old)).toBe(true);
    expect(changed({ ...old, metadata: { ...meta, deletionTimestamp: new Date() } }, old)).toBe(true);
    expect(changed({ ...old, metadata: { ...meta, finalizers: ['hostplane.dev/site'] } }, old)).toBe(true);
    expect(changed({ ...old, metadata: { ...meta, annotations: { a: 'b' } } }, old)).toBe(true);
    expect(changed({ ...old, metadata: { ...meta, labels: { a: 'b' } } }, old)).toBe(false);
  });

  it('watchPrimary queues every add and delete, and the updates its predicate lets through', () => {
    const handlers: Record<string, (obj: SiteResource, old?: SiteResource) => void> = {};
    const queued: string[] = [];
    watchPrimary<SiteResource>(
      {
        on: ((event: string, handler: (obj: SiteResource, old?: SiteResource) => void) => {
          handlers[event] = handler;
        }) as Informer<SiteResource>['on'],
      },
      { enqueue: (key) => queued.push(key) },
      generationChanged,
    );
    handlers.add?.(site(1));
    handlers.update?.({ ...site(1), status: {} }, site(1));
    handlers.update?.(site(2), site(1));
    handlers.delete?.(site(2));
    expect(queued).toEqual(['ns/blog', 'ns/blog', 'ns/blog']);
  });
});

describe('shared informers', () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });

  it('give every controller the same informer per collection, and none after they started', async () => {
    const informers = new SharedInformers({ kubeConfig, namespace: 'ns', logger: createLogger('silent') });
    const sites = informers.forKind('Site');
    expect(informers.forKind('Site')).toBe(sites);
    expect(informers.forPath('sites', '/apis/hostplane.dev/v1alpha1/namespaces/ns/sites')).toBe(sites);
    expect(informers.forKind('Form')).not.toBe(sites);
    const path = '/apis/networking.k8s.io/v1/namespaces/ns/ingresses';
    expect(informers.forPath('ingresses', path, 'a=b')).not.toBe(informers.forPath('ingresses', path));

    const starting = informers.start(); // nothing listens there: retries until stopped
    expect(() => informers.forKind('SqliteDatabase')).toThrow(/after the shared informers started/);
    expect(informers.forKind('Site')).toBe(sites);
    expect(informers.hasSynced()).toBe(false);
    await informers.stop();
    await starting;
  });
});

describe('resync passes', () => {
  it('next() waits for a pass that starts after the call, not one already running', async () => {
    const tracker = new ResyncTracker();
    const running = tracker.begin();
    let resolved = false;
    const next = tracker.next().then((pass) => {
      resolved = true;
      return pass;
    });
    tracker.end(running, { failed: [] });
    await Promise.resolve();
    expect(resolved).toBe(false);
    const later = tracker.begin();
    tracker.end(later, { failed: ['site'] });
    expect(await next).toEqual({ failed: ['site'] });
  });

  it('next() rejects when no more passes will come', async () => {
    const tracker = new ResyncTracker();
    const next = tracker.next();
    tracker.close();
    await expect(next).rejects.toThrow(/stopped/);
  });
});
