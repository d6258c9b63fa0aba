import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  Backoff,
  KubeApiError,
  getJson,
  isExpired,
  type ObjectList,
  type StatusObject,
} from './informer-http.js';
import { watchRestartsTotal, type WatchRestartReason } from './metrics.js';

export { KubeApiError } from './informer-http.js';

/**
 * What the runtime reads of an object. Informers hand out the API server's JSON as is (timestamps
 * are strings), so this is looser than client-node's `KubernetesObject`, which types them as Date;
 * every `KubernetesObject` is one.
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

// T is not read here; it keeps `InformerOptions<Site>` and `Informer<Site>` spelled alike.
// eslint-disable-next-line @typescript-eslint/no-unused-vars
export interface InformerOptions<T extends KubeObject> {
  /** For logs and metrics, e.g. 'sites'. */
  name: string;
  kubeConfig: KubeConfig;
  /**
   * API path of the collection, e.g. `/apis/hostplane.dev/v1alpha1/namespaces/ns/sites` or
   * `/apis/networking.k8s.io/v1/namespaces/ns/ingresses`.
   */
  path: string;
  labelSelector?: string;
  logger: Logger;
}

export type InformerEvent = 'add' | 'update' | 'delete';

/** Page size of the list calls. */
const LIST_PAGE_SIZE = 500;
/** Server-side watch timeouts are spread over this range so that informers do not re-watch in step. */
const WATCH_TIMEOUT_MIN_SECONDS = 300;
const WATCH_TIMEOUT_MAX_SECONDS = 600;
/** A watch the server should have closed this long ago is treated as a dead connection. */
const WATCH_TIMEOUT_GRACE_MS = 30_000;
/** A watch that ends sooner than this is not a healthy one: back off before the next attempt. */
const HEALTHY_WATCH_MS = 1_000;

/**
 * A reflector and its cache, like client-go's informers: lists the collection, then watches it
 * from the list's resourceVersion, keeping an in-memory copy and telling handlers about changes.
 *
 * - A watch that ends cleanly (server timeout) is resumed from the last resourceVersion seen.
 * - "410 Gone" (HTTP or a watch ERROR event) means events were lost: the collection is listed again
 *   and the cache replaced, with `delete` for objects that vanished and `add`/`update` for the rest.
 * - Other failures (API server restarting, 5xx, 429) are retried with back-off; the cache is kept.
 *
 * Objects handed out are the cache's own: treat them as read-only.
 */
export class Informer<T extends KubeObject> {
  private readonly name: string;
  private readonly kubeConfig: KubeConfig;
  private readonly path: string;
  private readonly labelSelector: string | undefined;
  private readonly logger: Logger;
  private readonly watcher: Watch;
  private readonly objects = new Map<string, T>();
  private readonly addHandlers: ((obj: T) => void)[] = [];
  private readonly updateHandlers: ((obj: T, old: T) => void)[] = [];
  private readonly deleteHandlers: ((obj: T) => void)[] = [];
  /** Aborts the list in flight, the back-off sleep and the watch when stop() is called. */
  private readonly stopping = new AbortController();
  private resourceVersion = '';
  private synced = false;
  private running: Promise<void> | undefined;
  private resolveFirstSync: (() => void) | undefined;

  constructor(options: InformerOptions<T>) {
    this.name = options.name;
    this.kubeConfig = options.kubeConfig;
    this.path = options.path;
    this.labelSelector = options.labelSelector;
    this.logger = options.logger.child({ informer: options.name });
    this.watcher = new Watch(options.kubeConfig);
  }

  on(event: 'add' | 'delete', handler: (obj: T) => void): void;
  on(event: 'update', handler: (obj: T, old: T) => void): void;
  on(event: InformerEvent, handler: ((obj: T) => void) | ((obj: T, old: T) => void)): void {
    if (event === 'update') this.updateHandlers.push(handler as (obj: T, old: T) => void);
    else if (event === 'add') this.addHandlers.push(handler as (obj: T) => void);
    else this.deleteHandlers.push(handler as (obj: T) => void);
  }

  /**
   * Lists, then watches from the list's resourceVersion. Resolves once the first list is in the
   * cache (retrying with back-off until then), or when stop() is called before that.
   */
  start(): Promise<void> {
    if (this.running) throw new Error(`informer ${this.name} already started`);
    const firstSync = new Promise<void>((resolve) => (this.resolveFirstSync = resolve));
    this.running = this.run().catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug, but must not become an unhandled rejection.
      this.logger.error({ err }, 'informer loop crashed');
    });
    return firstSync;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.resolveFirstSync?.();
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    const backoff = new Backoff();
    let needList = true;
    let lastWatchExpiredAtOnce = false;
    while (!this.stopped) {
      if (needList) {
        try {
          await this.relist();
        } catch (err) {
          if (this.stopped) break;
          this.countRestart('error');
          const delayMs = backoff.next();
          this.logger.warn({ err, delayMs }, 'list failed; retrying');
          await this.pause(delayMs);
          continue;
        }
        needList = false;
        // The server answered a full list: whatever went wrong before is over.
        backoff.reset();
        if (!this.synced) {
          this.synced = true;
          this.logger.info({ objects: this.objects.size }, 'informer synced');
          this.resolveFirstSync?.();
        }
      }

      const watchStartedAt = Date.now();
      let outcome: 'closed' | 'expired' | 'failed';
      let failure: unknown;
      try {
        outcome = await this.watchOnce();
      } catch (err) {
        outcome = 'failed';
        failure = err;
      }
      if (this.stopped) break;
      // A watch that stayed up a while, however it ended, means the server was healthy.
      const healthy = Date.now() - watchStartedAt >= HEALTHY_WATCH_MS;
      if (healthy) backoff.reset();
      if (outcome === 'expired') {
        needList = true;
        this.countRestart('relist_410');
        this.logger.info(
          { resourceVersion: this.resourceVersion },
          'resource version expired; listing again',
        );
        // List again at once, unless the watch after the last fresh list expired at once too.
        if (!healthy && lastWatchExpiredAtOnce) await this.pause(backoff.next());
      } else if (outcome === 'closed') {
        this.countRestart('timeout');
        this.logger.debug({ resourceVersion: this.resourceVersion }, 'watch closed; watching again');
        if (!healthy) await this.pause(backoff.next());
      } else {
        this.countRestart('error');
        const delayMs = backoff.next();
        this.logger.warn({ err: failure, delayMs }, 'watch failed; retrying');
        await this.pause(delayMs);
      }
      lastWatchExpiredAtOnce = outcome === 'expired' && !healthy;
    }
  }

  private countRestart(reason: WatchRestartReason): void {
    watchRestartsTotal.inc({ informer: this.name, reason });
  }

  private async pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  /** Lists the whole collection (page by page) and replaces the cache with it. */
  private async relist(): Promise<void> {
    let items: T[] = [];
    let listResourceVersion = '';
    let continueToken: string | undefined;
    for (;;) {
      const query = new URLSearchParams({ limit: String(LIST_PAGE_SIZE) });
      if (this.labelSelector) query.set('labelSelector', this.labelSelector);
      if (continueToken) query.set('continue', continueToken);
      let page: ObjectList<T>;
      try {
        page = (await getJson(
          this.kubeConfig,
          `${this.path}?${query}`,
          this.stopping.signal,
        )) as ObjectList<T>;
      } catch (err) {
        if (continueToken && isExpired(err)) {
          // The snapshot the pages came from was compacted away: start over from a fresh one.
          items = [];
          continueToken = undefined;
          continue;
        }
        throw err;
      }
      // List items carry no kind/apiVersion (watch events do): fill them in so that both look alike.
      const kind = page.kind?.replace(/List$/, '');
      for (const item of page.items ?? []) {
        items.push({ apiVersion: page.apiVersion, kind, ...item });
      }
      listResourceVersion = page.metadata?.resourceVersion ?? '';
      continueToken = page.metadata?.continue || undefined;
      if (!continueToken) break;
    }
    this.replace(items, listResourceVersion);
  }

  private replace(items: T[], listResourceVersion: string): void {
    const fresh = new Map<string, T>();
    for (const item of items) fresh.set(cacheKey(item), item);
    for (const [key, old] of this.objects) {
      if (fresh.has(key)) continue;
      this.objects.delete(key);
      this.emit('delete', old);
    }
    for (const item of fresh.values()) this.upsert(item);
    this.resourceVersion = listResourceVersion;
  }

  private upsert(obj: T): void {
    const key = cacheKey(obj);
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    if (!old) this.emit('add', obj);
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
      for (const handler of this.updateHandlers) this.callHandler('update', () => handler(obj, old));
    }
  }

  private remove(obj: T): void {
    this.objects.delete(cacheKey(obj));
    // Handlers get the object's final state, as the watch reports it.
    this.emit('delete', obj);
  }

  private emit(event: 'add' | 'delete', obj: T): void {
    const handlers = event === 'add' ? this.addHandlers : this.deleteHandlers;
    for (const handler of handlers) this.callHandler(event, () => handler(obj));
  }

  /** A handler's bug must not break the informer (nor, if it is async, crash the process). */
  private callHandler(event: InformerEvent, call: () => unknown): void {
    const report = (err: unknown): void => this.logger.error({ err, event }, 'informer event handler failed');
    try {
      const result = call();
      if (result instanceof Promise) result.catch(report);
    } catch (err) {
      report(err);
    }
  }

  /**
   * One watch from the current resourceVersion. Resolves 'closed' when it ends cleanly (server
   * timeout, stop()), 'expired' on 410; rejects on other failures.
   */
  private watchOnce(): Promise<'closed' | 'expired'> {
    const timeoutSeconds =
      WATCH_TIMEOUT_MIN_SECONDS +
      Math.floor(Math.random() * (WATCH_TIMEOUT_MAX_SECONDS - WATCH_TIMEOUT_MIN_SECONDS + 1));
    const params: Record<string, string | number | boolean> = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
    };
    if (this.labelSelector) params.labelSelector = this.labelSelector;

    return new Promise((resolve, reject) => {
      let connection: AbortController | undefined;
      let failure: unknown;
      let expired = false;
      let settled = false;
      const abort = (): void => connection?.abort();
      const deadConnectionTimer = setTimeout(abort, timeoutSeconds * 1000 + WATCH_TIMEOUT_GRACE_MS);
      deadConnectionTimer.unref();
      const onStop = (): void => {
        abort();
        // Do not wait for a connection attempt that may hang: the loop only needs to exit.
        finish();
      };
      this.stopping.signal.addEventListener('abort', onStop, { once: true });

      const finish = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadConnectionTimer);
        this.stopping.signal.removeEventListener('abort', onStop);
        if (failure) reject(failure);
        else if (expired || isExpired(err)) resolve('expired');
        else if (err && !this.stopped && !(err instanceof Error && err.name === 'AbortError')) reject(err);
        else resolve('closed');
      };

      const onEvent = (type: string, obj: unknown): void => {
        if (settled) return;
        switch (type) {
          case 'ADDED':
          case 'MODIFIED':
            this.upsert(obj as T);
            break;
          case 'DELETED':
            this.remove(obj as T);
            break;
          case 'BOOKMARK':
            break;
          case 'ERROR': {
            const status = (obj ?? {}) as StatusObject;
            if (status.code === 410) expired = true;
            else
              failure = new KubeApiError(
                status.code ?? 500,
                status.message ?? 'watch ERROR event without a message',
              );
            abort();
            return;
          }
          default:
            this.logger.warn({ type }, 'unknown watch event type');
            return;
        }
        const resourceVersion = (obj as KubeObject).metadata?.resourceVersion;
        if (resourceVersion) this.resourceVersion = resourceVersion;
      };

      this.watcher
        .watch(this.path, params, onEvent, (err: unknown) => finish(err))
        .then(
          (controller) => {
            connection = controller;
            if (settled) controller.abort();
          },
          (err: unknown) => finish(err),
        );
    });
  }
}

function cacheKey(obj: KubeObject): string {
  const name = obj.metadata?.name ?? '';
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}
