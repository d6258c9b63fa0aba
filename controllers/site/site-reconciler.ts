import {
  CoreV1Api,
  KubernetesObjectApi,
  NetworkingV1Api,
  PatchStrategy,
  type V1OwnerReference,
  type KubeConfig,
  type V1Ingress,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { siteUrl, type Config, type KubernetesConfig } from '../../src/config/config.js';
import {
  MANAGED_BY_LABEL,
  SITE_FINALIZER,
  SITE_ID_ANNOTATION,
  SITE_LABEL,
  SiteResources,
  isConflict,
  isNotFound,
} from '../../src/kube/client.js';
import {
  API_VERSION,
  siteKind,
  siteSpecSchema,
  type Condition,
  type DomainStatus,
  type SiteResource,
  type SiteSpec,
  type SiteStatus,
} from '../../src/kube/resources.js';
import { newApiKey, PlatformError, type Platform, type RoutingResult } from '../../src/platform/platform.js';
import type { ReconcileResult, Reconciler } from '../runtime/controller.js';
import { splitKey } from '../runtime/controller.js';
import type { Informer } from '../runtime/informer.js';
import { EventRecorder } from './events.js';

export const CONTROLLER_NAME = 'hostplane-controller';
/** After a 409 (our copy was stale): soon, the watch event with the new version is on its way. */
const CONFLICT_RETRY_MS = 200;
/** After a refusal that another object may lift (a taken slug or domain, a claimed site). */
const WAITING_RETRY_MS = 30_000;

/** The Ingress of a Site: one per Site, named after it. */
export const ingressNameFor = (siteName: string): string => `site-${siteName}`.slice(0, 253);
/** The Secret holding the first API key of a site adopted from a Site resource. */
export const keySecretNameFor = (siteName: string): string => `site-${siteName}-api-key`.slice(0, 253);

export interface SiteReconcilerDeps {
  config: Config & { kubernetes: KubernetesConfig };
  kubeConfig: KubeConfig;
  platform: Platform;
  sites: Informer<SiteResource>;
  logger: Logger;
}

/**
 * Drives a Site resource to its state: the site exists in the database (adopted with a first API
 * key when the resource came first), the database routes its slug and custom domains, one Ingress
 * (owned by the Site) routes them to the edge, and the status says how that went. Deletion runs
 * behind a finalizer: Retain detaches the site (routing only), Delete removes its data too.
 * Level-triggered and idempotent: every pass recomputes everything from the resource.
 */
export class SiteReconciler implements Reconciler {
  private readonly resources: SiteResources;
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private readonly events: EventRecorder;
  private readonly kube: KubernetesConfig;

  constructor(private readonly deps: SiteReconcilerDeps) {
    this.kube = deps.config.kubernetes;
    this.resources = new SiteResources(deps.kubeConfig, this.kube.namespace, CONTROLLER_NAME);
    this.objects = KubernetesObjectApi.makeApiClient(deps.kubeConfig);
    this.core = deps.kubeConfig.makeApiClient(CoreV1Api);
    this.networking = deps.kubeConfig.makeApiClient(NetworkingV1Api);
    this.events = new EventRecorder(this.core, CONTROLLER_NAME, this.kube.podName, deps.logger);
  }

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const site = this.deps.sites.get(namespace, name);
    if (!site) return; // gone; the finalizer already cleaned up
    try {
      if (site.metadata.deletionTimestamp) return await this.finalize(site);
      return await this.reconcileLive(site);
    } catch (err) {
      // Someone changed the Site after our cache copy: its watch event is on the way, and the
      // retry reads the new version. Expected under concurrent writers, so not an error.
      if (isConflict(err)) return { requeueAfterMs: CONFLICT_RETRY_MS };
      throw err;
    }
  }

  private async reconcileLive(site: SiteResource): Promise<ReconcileResult | void> {
    if (!site.metadata.finalizers?.includes(SITE_FINALIZER)) {
      // The patch changes the resource; its watch event brings the next pass.
      await this.resources.patchMetadata(site, {
        finalizers: [...(site.metadata.finalizers ?? []), SITE_FINALIZER],
      });
      return;
    }

    const parsed = siteSpecSchema.safeParse(site.spec);
    if (!parsed.success) {
      const message = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      await this.writeStatus(site, { ready: condition(site, 'False', 'InvalidSpec', message) });
      return;
    }
    const spec = parsed.data;

    const linked = await this.linkSite(site, spec);
    if ('refused' in linked) {
      this.events.warning(site, linked.reason, linked.refused);
      await this.writeStatus(site, { ready: condition(site, 'False', linked.reason, linked.refused) });
      return { requeueAfterMs: WAITING_RETRY_MS };
    }
    // Linking may have annotated the resource: later writes need its new resourceVersion.
    site = linked.resource;

    const rejected = (spec.customDomains ?? []).filter((d) => this.isPlatformHost(d));
    const wanted = (spec.customDomains ?? []).filter((d) => !this.isPlatformHost(d));
    const routing = await this.deps.platform.applyRouting(linked.siteId, spec.slug, wanted);
    if (!routing.slugApplied) {
      this.events.warning(
        site,
        'SlugTaken',
        `slug "${spec.slug}" belongs to another site; keeping "${routing.slug}"`,
      );
    }
    const ingress = await this.applyIngress(site, spec, routing);
    if ('refused' in ingress) {
      this.events.warning(site, 'IngressConflict', ingress.refused);
      await this.writeStatus(site, { ready: condition(site, 'False', 'IngressConflict', ingress.refused) });
      return { requeueAfterMs: WAITING_RETRY_MS };
    }

    const domains: DomainStatus[] = [
      ...routing.domains.map((d) =>
        d.routed
          ? { hostname: d.hostname, ready: true }
          : {
              hostname: d.hostname,
              ready: false,
              reason: 'DomainTaken',
              message: 'another site already serves this host name',
            },
      ),
      ...rejected.map((hostname) => ({
        hostname,
        ready: false,
        reason: 'DomainRejected',
        message: 'the API host, the sites domain and its subdomains cannot be custom domains',
      })),
    ];
    const problems = [
      ...(routing.slugApplied ? [] : [`slug "${spec.slug}" is taken by another site`]),
      ...domains.filter((d) => !d.ready).map((d) => `${d.hostname}: ${d.message}`),
    ];
    const reason = !routing.slugApplied ? 'SlugTaken' : domains.find((d) => !d.ready)?.reason;
    const ready = reason
      ? condition(site, 'False', reason, problems.join('; '))
      : condition(site, 'True', 'Reconciled', 'the site is routed to the edge');
    await this.writeStatus(site, {
      ready,
      siteId: linked.siteId,
      url: siteUrlFor(this.deps.config, routing.slug, spec.tls ? 'https' : undefined),
      ingressName: ingress.name,
      apiKeySecretName: linked.apiKeySecretName ?? site.status?.apiKeySecretName,
      domains,
    });
    // A taken slug or domain may be released later: look again without waiting for the resync.
    return reason ? { requeueAfterMs: WAITING_RETRY_MS } : undefined;
  }

  /** The API host, the sites domain and `<anything>.<sites domain>` are the platform's own. */
  private isPlatformHost(hostname: string): boolean {
    const { sitesDomain, baseUrl } = this.deps.config;
    return (
      hostname === new URL(baseUrl).hostname ||
      hostname === sitesDomain ||
      hostname.endsWith(`.${sitesDomain}`)
    );
  }

  /** Is a Site resource with this uid still in the cache (so its claims stand)? */
  private isLiveResource = (uid: string): boolean =>
    this.deps.sites.list().some((s) => s.metadata.uid === uid);

  /**
   * The database site this resource controls, claimed by its uid (so a copied annotation cannot
   * take a site over): the one it already controls; else the annotated one (an `admin
   * create-site` site or a resync-created resource); else adoption: the site its key Secret
   * opens, or a new site (the key is stored in the Secret first, so a crash in between never
   * loses it), or a detached site with the same slug (re-attached).
   */
  private async linkSite(
    site: SiteResource,
    spec: SiteSpec,
  ): Promise<
    | { siteId: number; apiKeySecretName?: string; resource: SiteResource }
    | { refused: string; reason: string }
  > {
    const { platform } = this.deps;
    const uid = site.metadata.uid ?? '';
    const annotate = async (siteId: number): Promise<SiteResource> =>
      site.metadata.annotations?.[SITE_ID_ANNOTATION] === String(siteId)
        ? site
        : this.resources.patchMetadata(site, { annotations: { [SITE_ID_ANNOTATION]: String(siteId) } });

    const controlled = await platform.siteRoutingOfResource(uid);
    if (controlled) return { siteId: controlled.siteId, resource: await annotate(controlled.siteId) };

    const claim = async (siteId: number, event: string, message: string) => {
      const result = await platform.claimSite(siteId, uid, this.isLiveResource);
      if (result !== 'claimed') return undefined;
      const resource = await annotate(siteId);
      this.events.normal(resource, event, message);
      return resource;
    };

    const annotated = Number(site.metadata.annotations?.[SITE_ID_ANNOTATION]);
    if (Number.isInteger(annotated) && annotated > 0 && (await platform.getSite(annotated))) {
      const resource = await claim(annotated, 'Linked', `linked to site ${annotated}`);
      if (resource) return { siteId: annotated, resource };
      return { refused: `site ${annotated} is controlled by another Site resource`, reason: 'SiteClaimed' };
    }

    const secretName = keySecretNameFor(site.metadata.name);
    const apiKey = await this.ensureKeySecret(site, secretName);
    const keySite = (await platform.authenticateKey(apiKey))?.siteId;
    if (keySite !== undefined) {
      // A previous pass created the site but did not get to annotate the resource.
      const resource = await claim(
        keySite,
        'Adopted',
        `adopted site ${keySite}; its API key is in Secret ${secretName}`,
      );
      if (resource) return { siteId: keySite, apiKeySecretName: secretName, resource };
      return { refused: `site ${keySite} is controlled by another Site resource`, reason: 'SiteClaimed' };
    }
    try {
      const created = await platform.createSite({
        email: spec.owner?.email ?? this.kube.clusterOwnerEmail,
        plan: spec.owner?.plan ?? 'free',
        slug: spec.slug,
        apiKey,
        resourceUid: uid,
      });
      const resource = await annotate(created.siteId);
      this.events.normal(
        resource,
        'Adopted',
        `created site ${created.siteId}; its API key is in Secret ${secretName}`,
      );
      return { siteId: created.siteId, apiKeySecretName: secretName, resource };
    } catch (err) {
      if (!(err instanceof PlatformError) || err.code !== 'slug_taken') throw err;
    }
    const holder = await platform.siteRoutingBySlug(spec.slug);
    if (holder?.detached) {
      const resource = await claim(holder.siteId, 'Reattached', `re-attached detached site ${holder.siteId}`);
      if (resource) return { siteId: holder.siteId, resource };
    }
    return {
      refused: `slug "${spec.slug}" belongs to a site this resource does not control`,
      reason: 'SlugTaken',
    };
  }

  /** The adoption key, kept in a Secret (not owned by the Site: with Retain the key outlives it). */
  private async ensureKeySecret(site: SiteResource, secretName: string): Promise<string> {
    const namespace = this.kube.namespace;
    try {
      const secret = await this.core.readNamespacedSecret({ name: secretName, namespace });
      const stored = secret.data?.apiKey;
      if (stored) return Buffer.from(stored, 'base64').toString('utf8');
      throw new Error(`Secret ${secretName} exists but has no apiKey entry; delete it or add the key`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const apiKey = newApiKey();
    await this.core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: secretName,
          labels: { [MANAGED_BY_LABEL]: CONTROLLER_NAME, [SITE_LABEL]: site.metadata.name },
        },
        type: 'Opaque',
        data: { apiKey: Buffer.from(apiKey).toString('base64') },
      },
    });
    // A concurrent create answers 409: the retry then reads the winner's key.
    return apiKey;
  }

  /**
   * Server-side apply of the Site's Ingress (the controller owns every field it sets). An Ingress
   * of that name that this Site does not control is left alone: forcing our fields onto it would
   * take over someone else's routing.
   */
  private async applyIngress(
    site: SiteResource,
    spec: SiteSpec,
    routing: RoutingResult,
  ): Promise<{ name: string } | { refused: string }> {
    const { sitesDomain } = this.deps.config;
    const name = ingressNameFor(site.metadata.name);
    const existing = await this.readIngress(name);
    if (existing && !isControlledBy(existing.metadata?.ownerReferences, site)) {
      return { refused: `Ingress ${name} exists and is not controlled by this Site` };
    }
    const hosts = [
      `${routing.slug}.${sitesDomain}`,
      ...routing.domains.filter((d) => d.routed).map((d) => d.hostname),
    ];
    const backend = {
      service: { name: this.kube.edgeService.name, port: { number: this.kube.edgeService.port } },
    };
    const annotations: Record<string, string> = {};
    if (spec.tls) {
      const key =
        spec.tls.issuerKind === 'Issuer' ? 'cert-manager.io/issuer' : 'cert-manager.io/cluster-issuer';
      annotations[key] = spec.tls.issuerName;
    }
    const ingress: V1Ingress = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: {
        name,
        namespace: this.kube.namespace,
        labels: { [MANAGED_BY_LABEL]: CONTROLLER_NAME, [SITE_LABEL]: site.metadata.name },
        annotations,
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: siteKind.kind,
            name: site.metadata.name,
            uid: site.metadata.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        ...(this.kube.ingressClass ? { ingressClassName: this.kube.ingressClass } : {}),
        rules: hosts.map((host) => ({
          host,
          http: { paths: [{ path: '/', pathType: 'Prefix', backend }] },
        })),
        ...(spec.tls ? { tls: [{ hosts, secretName: `${name}-tls` }] } : {}),
      },
    };
    await this.objects.patch(
      ingress,
      undefined,
      undefined,
      CONTROLLER_NAME,
      true,
      PatchStrategy.ServerSideApply,
    );
    return { name };
  }

  private async readIngress(name: string): Promise<V1Ingress | undefined> {
    try {
      return await this.networking.readNamespacedIngress({ name, namespace: this.kube.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Behind the finalizer: stop routing first (Ingress), then the data. Only the site this
   * resource controls is touched; a refused resource (taken slug, claimed site) owns nothing.
   */
  private async finalize(site: SiteResource): Promise<ReconcileResult | void> {
    if (!site.metadata.finalizers?.includes(SITE_FINALIZER)) return;
    const policy = site.spec.deletionPolicy ?? 'Retain';
    const namespace = this.kube.namespace;
    const ingressName = ingressNameFor(site.metadata.name);
    const ingress = await this.readIngress(ingressName);
    // Explicitly, not left to garbage collection: routing must stop before the finalizer goes.
    if (ingress && isControlledBy(ingress.metadata?.ownerReferences, site)) {
      await this.deleteIgnoringMissing({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: ingressName, namespace },
      });
    }
    const controlled = await this.deps.platform.siteRoutingOfResource(site.metadata.uid ?? '');
    if (controlled && policy === 'Delete') {
      // Forms and SqliteDatabases go first, through their own finalizers, while the site's rows
      // still exist; the site is deleted once none is left.
      if ((await this.deleteDependents(site)) > 0) return { requeueAfterMs: WAITING_RETRY_MS / 10 };
      await this.deps.platform.deleteSite(controlled.siteId);
    } else if (controlled) {
      await this.deps.platform.detachSite(controlled.siteId);
    }
    // The adoption key is kept only with the site it opens (Retain); otherwise it opens nothing.
    if (!controlled || policy === 'Delete') {
      await this.deleteIgnoringMissing({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: keySecretNameFor(site.metadata.name), namespace },
      });
    }
    if (controlled) {
      this.events.normal(
        site,
        policy === 'Delete' ? 'Deleted' : 'Detached',
        policy === 'Delete'
          ? `removed site ${controlled.siteId} with its files, forms and databases`
          : `removed the routing of site ${controlled.siteId}; its files, forms and databases are kept`,
      );
    }
    await this.resources.patchMetadata(site, {
      finalizers: (site.metadata.finalizers ?? []).filter((f) => f !== SITE_FINALIZER),
    });
  }

  /** Deletes the Forms and SqliteDatabases that name this Site; returns how many still exist. */
  private async deleteDependents(site: SiteResource): Promise<number> {
    let remaining = 0;
    for (const kind of ['Form', 'SqliteDatabase']) {
      const list = await this.objects.list(API_VERSION, kind, this.kube.namespace);
      for (const item of list.items as Array<{
        metadata?: { name?: string; deletionTimestamp?: unknown };
        spec?: { siteRef?: { name?: string } };
      }>) {
        if (item.spec?.siteRef?.name !== site.metadata.name || !item.metadata?.name) continue;
        remaining++;
        if (item.metadata.deletionTimestamp) continue; // already going
        await this.deleteIgnoringMissing({
          apiVersion: API_VERSION,
          kind,
          metadata: { name: item.metadata.name, namespace: this.kube.namespace },
        });
      }
    }
    return remaining;
  }

  private async deleteIgnoringMissing(object: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string };
  }): Promise<void> {
    try {
      await this.objects.delete(object);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Writes the status when it changed; a stale resourceVersion answers 409 and the pass is retried. */
  private async writeStatus(
    site: SiteResource,
    next: Omit<SiteStatus, 'conditions' | 'observedGeneration'> & { ready: Condition },
  ): Promise<void> {
    const { ready, ...rest } = next;
    const status: SiteStatus = {
      ...dropUndefined(rest),
      observedGeneration: site.metadata.generation ?? 0,
      conditions: [ready],
    };
    if (JSON.stringify(sortKeys(status)) === JSON.stringify(sortKeys(site.status ?? {}))) return;
    await this.resources.replaceStatus(site, status);
  }
}

function isControlledBy(owners: V1OwnerReference[] | undefined, site: SiteResource): boolean {
  return (owners ?? []).some((o) => o.controller && o.kind === siteKind.kind && o.uid === site.metadata.uid);
}

/** A Ready condition, keeping lastTransitionTime when the status did not change. */
function condition(
  site: SiteResource,
  status: Condition['status'],
  reason: string,
  message: string,
): Condition {
  const previous = site.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    type: 'Ready',
    status,
    observedGeneration: site.metadata.generation ?? 0,
    lastTransitionTime:
      previous && previous.status === status
        ? previous.lastTransitionTime
        : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    reason,
    message,
  };
}

function siteUrlFor(config: Config, slug: string, scheme: 'https' | undefined): string {
  const url = siteUrl(config, slug);
  return scheme ? url.replace(/^http:/, 'https:') : url;
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}
