import {
  ApiException,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { API_VERSION, GROUP, VERSION, siteKind, type SiteResource, type SiteStatus } from './resources.js';

/** Links a Site resource to its site in the control-plane database. */
export const SITE_ID_ANNOTATION = 'hostplane.dev/site-id';
/** Held by every Site until the controller has removed its routing (and, with Delete, its data). */
export const SITE_FINALIZER = 'hostplane.dev/site-cleanup';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const SITE_LABEL = 'hostplane.dev/site';

/** In a pod: its service account; elsewhere: $KUBECONFIG or ~/.kube/config. */
export function kubeConfigFromEnvironment(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/** The HTTP status of a failed Kubernetes API call (undefined for network errors). */
export function apiStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export const isNotFound = (err: unknown): boolean => apiStatus(err) === 404;
export const isConflict = (err: unknown): boolean => apiStatus(err) === 409;

/** Typed access to Site resources in one namespace. */
export class SiteResources {
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;

  constructor(
    kubeConfig: KubeConfig,
    readonly namespace: string,
    private readonly fieldManager: string,
  ) {
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  /** Collection path, for informers. */
  get path(): string {
    return `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${siteKind.plural}`;
  }

  async get(name: string): Promise<SiteResource | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: this.namespace,
        plural: siteKind.plural,
        name,
      })) as SiteResource;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create(site: Omit<SiteResource, 'apiVersion' | 'kind'>): Promise<SiteResource> {
    return (await this.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: siteKind.plural,
      body: { apiVersion: API_VERSION, kind: siteKind.kind, ...site },
      fieldManager: this.fieldManager,
    })) as SiteResource;
  }

  async list(): Promise<SiteResource[]> {
    const list = (await this.custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: siteKind.plural,
    })) as { items: SiteResource[] };
    return list.items;
  }

  /** Replaces spec and metadata (409 when the Site changed since it was read). */
  async replace(site: SiteResource): Promise<SiteResource> {
    return (await this.custom.replaceNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: siteKind.plural,
      name: site.metadata.name,
      body: site,
      fieldManager: this.fieldManager,
    })) as SiteResource;
  }

  async delete(name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: siteKind.plural,
      name,
    });
  }

  /**
   * JSON merge patch of metadata (finalizers, annotations). Carrying the resourceVersion makes it
   * conditional: a concurrent change answers 409 and the caller retries from fresh state.
   */
  async patchMetadata(
    site: SiteResource,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<SiteResource> {
    const patch = {
      apiVersion: API_VERSION,
      kind: siteKind.kind,
      metadata: {
        name: site.metadata.name,
        namespace: this.namespace,
        resourceVersion: site.metadata.resourceVersion,
        ...metadata,
      },
    } as KubernetesObject;
    return (await this.objects.patch(
      patch,
      undefined,
      undefined,
      this.fieldManager,
      undefined,
      PatchStrategy.MergePatch,
    )) as SiteResource;
  }

  /** Replaces the status subresource (409 when the Site changed since it was read). */
  async replaceStatus(site: SiteResource, status: SiteStatus): Promise<SiteResource> {
    return (await this.custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: siteKind.plural,
      name: site.metadata.name,
      body: { ...site, status },
      fieldManager: this.fieldManager,
    })) as SiteResource;
  }
}
