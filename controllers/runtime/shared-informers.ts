import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  resourceKindsByName,
  resourcePath,
  type KindName,
  type ResourceTypes,
} from '../../src/kube/index.js';
import { Informer, type KubeObject } from './informer.js';

export interface SharedInformersOptions {
  kubeConfig: KubeConfig;
  /** Namespace of the custom resources. */
  namespace: string;
  logger: Logger;
}

/**
 * One informer per collection, however many controllers watch it (the Site is watched by its own
 * controller and by those of Forms and SqliteDatabases): one list, one watch and one cache, with
 * each controller adding its own handlers. Informers are asked for while controllers are set up,
 * then all start together.
 */
export class SharedInformers {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly optional: Informer<KubeObject>[] = [];
  private started = false;

  constructor(private readonly options: SharedInformersOptions) {}

  /** The informer of a custom resource kind in the namespace, e.g. `forKind('Site')`. */
  forKind<K extends KindName>(kind: K): Informer<ResourceTypes[K]> {
    const resourceKind = resourceKindsByName[kind];
    return this.forPath<ResourceTypes[K]>(
      resourceKind.plural,
      resourcePath(resourceKind, this.options.namespace),
    );
  }

  /**
   * The informer of any collection, e.g. `/apis/networking.k8s.io/v1/namespaces/ns/ingresses`
   * with a label selector. `name` labels its logs and metrics; the first caller's name is kept.
   * The caller vouches that T is what the path lists.
   */
  forPath<T extends KubeObject>(name: string, path: string, labelSelector?: string): Informer<T> {
    const key = `${path}?${labelSelector ?? ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      if (this.started) throw new Error(`informer ${name} asked for after the shared informers started`);
      informer = new Informer<KubeObject>({ ...this.options, name, path, labelSelector });
      this.informers.set(key, informer);
    }
    // The cache holds whatever the path lists; T is the caller's name for it.
    return informer as unknown as Informer<T>;
  }

  /**
   * An informer of a collection that may not be served (a CRD of another project, e.g.
   * cert-manager's): started with the others, but nothing waits for it to fill, hasSynced() does
   * not count it, and a list that fails is retried with back-off (and logged) until it is served.
   * Its own hasSynced() tells whether its cache can be trusted.
   */
  forOptionalPath<T extends KubeObject>(name: string, path: string, labelSelector?: string): Informer<T> {
    if (this.started) throw new Error(`informer ${name} asked for after the shared informers started`);
    const informer = new Informer<KubeObject>({ ...this.options, name, path, labelSelector });
    this.optional.push(informer);
    // The cache holds whatever the path lists; T is the caller's name for it.
    return informer as unknown as Informer<T>;
  }

  /** Starts every informer; resolves once all caches are filled (or stop() was called). */
  async start(): Promise<void> {
    if (this.started) throw new Error('shared informers already started');
    this.started = true;
    for (const informer of this.optional) void informer.start();
    await Promise.all([...this.informers.values()].map((informer) => informer.start()));
  }

  hasSynced(): boolean {
    return [...this.informers.values()].every((informer) => informer.hasSynced());
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values(), ...this.optional].map((informer) => informer.stop()));
  }
}
