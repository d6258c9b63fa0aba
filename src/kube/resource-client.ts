import {
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { isNotFound, makeKubeApi, type KubeApiOptions } from './api-client.js';
import {
  formKind,
  siteKind,
  sqliteDatabaseKind,
  type CustomResource,
  type FormResource,
  type ResourceKind,
  type SiteResource,
  type SqliteDatabaseResource,
} from './resource-kinds.js';
import { API_VERSION, GROUP, VERSION } from './resources.js';

/** The object type of each custom resource kind. */
export interface ResourceTypes {
  Site: SiteResource;
  Form: FormResource;
  SqliteDatabase: SqliteDatabaseResource;
}
export type KindName = keyof ResourceTypes;

export const resourceKindsByName: { readonly [K in KindName]: ResourceKind } = {
  Site: siteKind,
  Form: formKind,
  SqliteDatabase: sqliteDatabaseKind,
};

export type AnyResource = CustomResource<unknown, unknown>;
export type StatusOf<R> = R extends CustomResource<unknown, infer S> ? S : never;
/** What a caller writes: the server fills in apiVersion and kind from the client. */
export type NewResource<R extends AnyResource> = Omit<R, 'apiVersion' | 'kind'>;

/** The collection path of a kind in a namespace (what an informer lists and watches). */
export const resourcePath = (kind: ResourceKind, namespace: string): string =>
  `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${kind.plural}`;

/**
 * Typed access to one custom resource kind in one namespace. Every write that carries the
 * resource's resourceVersion is conditional: a concurrent change answers 409 and the caller
 * retries from fresh state. Calls have the per-call deadline of api-client.ts.
 */
export class ResourceClient<R extends AnyResource> {
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;

  constructor(
    readonly kind: ResourceKind,
    kubeConfig: KubeConfig,
    readonly namespace: string,
    private readonly fieldManager: string,
    options: KubeApiOptions = {},
  ) {
    this.objects = makeKubeApi(kubeConfig, KubernetesObjectApi, options);
    this.custom = makeKubeApi(kubeConfig, CustomObjectsApi, options);
  }

  /** Collection path, for informers. */
  get path(): string {
    return resourcePath(this.kind, this.namespace);
  }

  private get coordinates() {
    return { group: GROUP, version: VERSION, namespace: this.namespace, plural: this.kind.plural };
  }

  async get(name: string): Promise<R | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({ ...this.coordinates, name })) as R;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every resource of the kind in the namespace, or those matching `labelSelector`. */
  async list(labelSelector?: string): Promise<R[]> {
    const list = (await this.custom.listNamespacedCustomObject({ ...this.coordinates, labelSelector })) as {
      items: R[];
    };
    return list.items;
  }

  /** Creates the resource (409 when one of that name exists). */
  async create(resource: NewResource<R>): Promise<R> {
    return (await this.custom.createNamespacedCustomObject({
      ...this.coordinates,
      body: { apiVersion: API_VERSION, kind: this.kind.kind, ...resource },
      fieldManager: this.fieldManager,
    })) as R;
  }

  /** Server-side apply: this field manager owns every field it sends; `force` takes conflicting ones. */
  async apply(resource: NewResource<R>, options: { force?: boolean } = {}): Promise<R> {
    const body = {
      apiVersion: API_VERSION,
      kind: this.kind.kind,
      ...resource,
      metadata: { ...resource.metadata, namespace: this.namespace },
    } as KubernetesObject;
    return (await this.objects.patch(
      body,
      undefined,
      undefined,
      this.fieldManager,
      options.force,
      PatchStrategy.ServerSideApply,
    )) as R;
  }

  /** Replaces spec and metadata (409 when the resource changed since it was read). */
  async replace(resource: R): Promise<R> {
    return (await this.custom.replaceNamespacedCustomObject({
      ...this.coordinates,
      name: resource.metadata.name,
      body: resource,
      fieldManager: this.fieldManager,
    })) as R;
  }

  async delete(name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({ ...this.coordinates, name });
  }

  /** JSON merge patch of metadata (finalizers, annotations, labels), conditional on resourceVersion. */
  async patchMetadata(
    resource: R,
    metadata: {
      finalizers?: string[];
      annotations?: Record<string, string | null>;
      labels?: Record<string, string | null>;
    },
  ): Promise<R> {
    const patch = {
      apiVersion: API_VERSION,
      kind: this.kind.kind,
      metadata: {
        name: resource.metadata.name,
        namespace: this.namespace,
        resourceVersion: resource.metadata.resourceVersion,
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
    )) as R;
  }

  /**
   * JSON merge patch of spec fields, and of `annotations` in the same write: `null` removes a
   * field, whoever set it (server-side apply would only drop the fields this manager owns).
   * Unconditional (last writer wins) unless `resourceVersion` is given: then a resource changed
   * since answers 409.
   */
  async patchSpec(
    name: string,
    spec: { [K in keyof R['spec']]?: R['spec'][K] | null },
    options: { resourceVersion?: string; annotations?: Record<string, string | null> } = {},
  ): Promise<R> {
    const { resourceVersion, annotations } = options;
    const patch = {
      apiVersion: API_VERSION,
      kind: this.kind.kind,
      metadata: {
        name,
        namespace: this.namespace,
        ...(resourceVersion ? { resourceVersion } : {}),
        ...(annotations ? { annotations } : {}),
      },
      spec,
    } as KubernetesObject;
    return (await this.objects.patch(
      patch,
      undefined,
      undefined,
      this.fieldManager,
      undefined,
      PatchStrategy.MergePatch,
    )) as R;
  }

  /**
   * JSON merge patch of annotations alone, unconditional (last writer wins): for a value that
   * states a fact about something outside the resource, true whichever copy it lands on.
   */
  async patchAnnotations(name: string, annotations: Record<string, string | null>): Promise<R> {
    const patch = {
      apiVersion: API_VERSION,
      kind: this.kind.kind,
      metadata: { name, namespace: this.namespace, annotations },
    } as KubernetesObject;
    return (await this.objects.patch(
      patch,
      undefined,
      undefined,
      this.fieldManager,
      undefined,
      PatchStrategy.MergePatch,
    )) as R;
  }

  /** Adds `finalizer` (no call when it is there already). */
  async addFinalizer(resource: R, finalizer: string): Promise<R> {
    const finalizers = resource.metadata.finalizers ?? [];
    if (finalizers.includes(finalizer)) return resource;
    return this.patchMetadata(resource, { finalizers: [...finalizers, finalizer] });
  }

  /** Removes `finalizer` (no call when it is gone already); the last one lets a deletion finish. */
  async removeFinalizer(resource: R, finalizer: string): Promise<R> {
    const finalizers = resource.metadata.finalizers ?? [];
    if (!finalizers.includes(finalizer)) return resource;
    return this.patchMetadata(resource, { finalizers: finalizers.filter((f) => f !== finalizer) });
  }

  /** Replaces the status subresource (RBAC verb `update` on <plural>/status); conditional. */
  async replaceStatus(resource: R, status: StatusOf<R>): Promise<R> {
    return (await this.custom.replaceNamespacedCustomObjectStatus({
      ...this.coordinates,
      name: resource.metadata.name,
      body: { ...resource, status },
      fieldManager: this.fieldManager,
    })) as R;
  }

  /**
   * JSON merge patch of the status subresource (RBAC verb `patch` on <plural>/status); fields
   * absent from `status` are kept, `null` removes one. Conditional on resourceVersion.
   */
  async patchStatus(resource: R, status: Partial<StatusOf<R>>): Promise<R> {
    return (await this.custom.patchNamespacedCustomObjectStatus(
      {
        ...this.coordinates,
        name: resource.metadata.name,
        body: { metadata: { resourceVersion: resource.metadata.resourceVersion }, status },
        fieldManager: this.fieldManager,
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as R;
  }
}

/** The typed client of one kind: `resourceClient('Form', ...)` is a ResourceClient<FormResource>. */
export function resourceClient<K extends KindName>(
  kind: K,
  kubeConfig: KubeConfig,
  namespace: string,
  fieldManager: string,
  options: KubeApiOptions = {},
): ResourceClient<ResourceTypes[K]> {
  return new ResourceClient<ResourceTypes[K]>(
    resourceKindsByName[kind],
    kubeConfig,
    namespace,
    fieldManager,
    options,
  );
}
