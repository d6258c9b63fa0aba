import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
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
  private readonly events: EventRecorder;
  private readonly kube: KubernetesConfig;

  constructor(private readonly deps: SiteReconcilerDeps) {
    this.kube = deps.config.kubernetes;
    this.resources = new SiteResources(deps.kubeConfig, this.kube.namespace, CONTROLLER_NAME);
    this.objects = KubernetesObjectApi.makeApiClient(deps.kubeConfig);
    this.core = deps.kubeConfig.makeApiClient(CoreV1Api);
    this.events = new EventRecorder(this.core, CONTROLLER_NAME, this.kube.podName, deps.logger);
  }

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    let site = this.deps.sites.get(namespace, name);
    if (!site) return; // gone; the finalizer already cleaned up
    if (site.metadata.deletionTimestamp) return this.finalize(site);
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
      await this.writeStatus(site, { ready: condition(site, 'False', linked.reason, linked.refused) });
      return;
    }
    // Linking may have annotated the resource: later writes need its new resourceVersion.
    site = linked.resource;
    const routing = await this.deps.platform.applyRouting(linked.siteId, spec.slug, spec.customDomains ?? []);
    if (!routing.slugApplied) {
      this.events.warning(
        site,
        'SlugTaken',
        `slug "${spec.slug}" belongs to another site; keeping "${routing.slug}"`,
      );
    }
    const ingressName = await this.applyIngress(site, spec, routing);
    const domains: DomainStatus[] = routing.domains.map((d) =>
      d.routed
        ? { hostname: d.hostname, ready: true }
        : {
            hostname: d.hostname,
            ready: false,
            reason: 'DomainTaken',
            message: 'another site already serves this host name',
          },
    );
    const problems = [
      ...(routing.slugApplied ? [] : [`slug "${spec.slug}" is taken by another site`]),
      ...domains.filter((d) => !d.ready).map((d) => `${d.hostname} is taken by another site`),
    ];
    const ready =
      problems.length === 0
        ? condition(site, 'True', 'Reconciled', 'the site is routed to the edge')
        : condition(site, 'False', routing.slugApplied ? 'DomainTaken' : 'SlugTaken', problems.join('; '));
    const scheme = spec.tls ? 'https' : undefined;
    await this.writeStatus(site, {
      ready,
      siteId: linked.siteId,
      url: siteUrlFor(this.deps.config, routing.slug, scheme),
      ingressName,
      apiKeySecretName: linked.apiKeySecretName ?? site.status?.apiKeySecretName,
      domains,
    });
  }

  /**
   * The database site behind the resource: the annotated one, else the one the adoption Secret's
   * key opens, else a new one (the key is stored in the Secret first, so a failure in between
   * never loses it), else a detached site with the same slug (re-attached).
   */
  private async linkSite(
    site: SiteResource,
    spec: SiteSpec,
  ): Promise<
    | { siteId: number; apiKeySecretName?: string; resource: SiteResource }
    | { refused: string; reason: string }
  > {
    const { platform } = this.deps;
    const annotated = Number(site.metadata.annotations?.[SITE_ID_ANNOTATION]);
    if (Number.isInteger(annotated) && annotated > 0 && (await platform.getSite(annotated))) {
      return { siteId: annotated, resource: site };
    }

    const secretName = keySecretNameFor(site.metadata.name);
    const apiKey = await this.ensureKeySecret(site, secretName);
    let siteId = (await platform.authenticateKey(apiKey))?.siteId;
    let reason = 'Adopted';
    if (siteId === undefined) {
      try {
        const created = await platform.createSite({
          email: spec.owner?.email ?? this.kube.clusterOwnerEmail,
          plan: spec.owner?.plan ?? 'free',
          slug: spec.slug,
          apiKey,
        });
        siteId = created.siteId;
      } catch (err) {
        if (!(err instanceof PlatformError) || err.code !== 'slug_taken') throw err;
        const holder = (await platform.listSiteRouting()).find((s) => s.slug === spec.slug);
        if (!holder?.detached) {
          this.events.warning(
            site,
            'SlugTaken',
            `slug "${spec.slug}" belongs to a site this resource does not own`,
          );
          return { refused: `slug "${spec.slug}" belongs to another site`, reason: 'SlugTaken' };
        }
        siteId = holder.siteId;
        reason = 'Reattached';
      }
    }
    const resource = await this.resources.patchMetadata(site, {
      annotations: { [SITE_ID_ANNOTATION]: String(siteId) },
    });
    this.events.normal(
      site,
      reason,
      reason === 'Adopted'
        ? `created site ${siteId}; its API key is in Secret ${secretName}`
        : `re-attached detached site ${siteId}`,
    );
    return { siteId, apiKeySecretName: reason === 'Adopted' ? secretName : undefined, resource };
  }

  /** The adoption key, kept in a Secret (not owned by the Site: with Retain the key outlives it). */
  private async ensureKeySecret(site: SiteResource, secretName: string): Promise<string> {
    const namespace = this.kube.namespace;
    try {
      const secret = await this.core.readNamespacedSecret({ name: secretName, namespace });
      const stored = secret.data?.apiKey;
      if (stored) return Buffer.from(stored, 'base64').toString('utf8');
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
    // A concurrent create (409) is surfaced as an error; the retry then reads the winner's key.
    return apiKey;
  }

  /** Server-side apply of the Site's Ingress: the controller owns every field it sets. */
  private async applyIngress(site: SiteResource, spec: SiteSpec, routing: RoutingResult): Promise<string> {
    const { sitesDomain } = this.deps.config;
    const name = ingressNameFor(site.metadata.name);
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
    return name;
  }

  private async finalize(site: SiteResource): Promise<void> {
    if (!site.metadata.finalizers?.includes(SITE_FINALIZER)) return;
    const policy = site.spec.deletionPolicy ?? 'Retain';
    const namespace = this.kube.namespace;
    // Explicitly, not left to garbage collection: routing must stop before the finalizer goes.
    await this.deleteIgnoringMissing({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: ingressNameFor(site.metadata.name), namespace },
    });
    const siteId = Number(site.metadata.annotations?.[SITE_ID_ANNOTATION]);
    if (Number.isInteger(siteId) && siteId > 0) {
      if (policy === 'Delete') {
        await this.deps.platform.deleteSite(siteId);
        await this.deleteIgnoringMissing({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: keySecretNameFor(site.metadata.name), namespace },
        });
        await this.deleteDependents(site);
      } else {
        await this.deps.platform.detachSite(siteId);
      }
    }
    this.events.normal(
      site,
      policy === 'Delete' ? 'Deleted' : 'Detached',
      policy === 'Delete'
        ? 'removed the site, its files, forms and databases'
        : 'removed routing; files, forms and databases are kept',
    );
    await this.resources.patchMetadata(site, {
      finalizers: (site.metadata.finalizers ?? []).filter((f) => f !== SITE_FINALIZER),
    });
  }

  /** Forms and SqliteDatabases that name this Site (their own finalizers purge their data). */
  private async deleteDependents(site: SiteResource): Promise<void> {
    for (const kind of ['Form', 'SqliteDatabase']) {
      const list = await this.objects.list(API_VERSION, kind, this.kube.namespace);
      for (const item of list.items as Array<{
        metadata?: { name?: string };
        spec?: { siteRef?: { name?: string } };
      }>) {
        if (item.spec?.siteRef?.name !== site.metadata.name || !item.metadata?.name) continue;
        await this.deleteIgnoringMissing({
          apiVersion: API_VERSION,
          kind,
          metadata: { name: item.metadata.name, namespace: this.kube.namespace },
        });
      }
    }
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

  /** Writes the status when it changed; a stale resourceVersion (409) fails the pass so it is retried. */
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
    try {
      await this.resources.replaceStatus(site, status);
    } catch (err) {
      if (isConflict(err)) this.deps.logger.debug({ site: site.metadata.name }, 'status conflict; retrying');
      throw err;
    }
  }
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
