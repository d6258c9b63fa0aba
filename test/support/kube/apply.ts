import { ApiextensionsV1Api, CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import https from 'node:https';
import { eventually } from '../eventually.js';
import type { KubeTestEnv } from './envtest.js';
import {
  componentObjects,
  containerEnv,
  DEFAULT_RELEASE,
  describeObject,
  renderChart,
  type PodSpecHolder,
  type Values,
} from './helm.js';

/**
 * Test helpers that put things into an envtest API server: apply objects (for real or as a
 * server-side dry run), create namespaces, install CRDs, and install the chart's RBAC so tests can
 * act as the chart's own ServiceAccounts. Rendering the chart is helm.ts.
 */

function errorMessage(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  if (e.body !== undefined) {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return `${e.code ?? ''} ${status.message}`.trim();
    } catch {
      // not JSON: use the raw body
    }
    return `${e.code ?? ''} ${body}`.trim();
  }
  return e.message ?? String(err);
}

export interface ApplyResult {
  object: KubernetesObject;
  /** What the server answered (for a dry run: the object as it would be stored). */
  applied?: KubernetesObject;
  error?: string;
}

/**
 * One request to the API server, raw JSON in and out (CA and bearer token from the env).
 *
 * Objects are sent exactly as rendered: client-node's typed serializer would silently drop keys
 * whose TypeScript names differ from the JSON ones (`default`, `x-kubernetes-*` in CRD schemas,
 * and any unknown field), so the server could not validate, default or reject them.
 */
export function kubeRequest(
  env: KubeTestEnv,
  method: string,
  urlPath: string,
  options: { body?: string; contentType?: string; token?: string } = {},
): Promise<{ status: number; body: unknown }> {
  const url = new URL(urlPath, env.server);
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        ca: env.caPem,
        timeout: 20_000,
        headers: {
          authorization: `Bearer ${options.token ?? env.adminToken}`,
          accept: 'application/json',
          ...(options.body !== undefined
            ? {
                'content-type': options.contentType ?? 'application/json',
                'content-length': Buffer.byteLength(options.body),
              }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: timeout`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

/** Finds a kind's resource name through API discovery (cached per apply call). */
async function resourceOf(
  env: KubeTestEnv,
  apiVersion: string,
  kind: string,
  cache: Map<string, Promise<{ status: number; body: unknown }>>,
): Promise<ResourceInfo & { base: string }> {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  let discovery = cache.get(base);
  if (!discovery) {
    discovery = kubeRequest(env, 'GET', base);
    cache.set(base, discovery);
  }
  const { status, body } = await discovery;
  if (status !== 200) throw new Error(`${status} ${apiVersion} is not served (discovery of ${base})`);
  const resources =
    (body as { resources?: { name: string; kind: string; namespaced: boolean }[] }).resources ?? [];
  const found = resources.find((r) => r.kind === kind && !r.name.includes('/'));
  if (!found) throw new Error(`${apiVersion} serves no kind ${kind}`);
  return { base, plural: found.name, namespaced: found.namespaced };
}

function statusMessage(status: number, body: unknown): string {
  const message = (body as { message?: string } | undefined)?.message;
  return `${status} ${message ?? (typeof body === 'string' ? body : JSON.stringify(body))}`;
}

/**
 * Server-side apply of every object (PATCH application/apply-patch+yaml, fieldManager helm-test,
 * force, fieldValidation Strict: unknown or duplicate fields are errors), as a dry run
 * (`dryRun=All`: admission and validation run, nothing is stored) unless `dryRun` is false.
 * Returns one result per object; rejected objects carry the server's message.
 */
export async function applyObjects(
  env: KubeTestEnv,
  objects: KubernetesObject[],
  options: { dryRun: boolean; token?: string },
): Promise<ApplyResult[]> {
  const discovery = new Map<string, Promise<{ status: number; body: unknown }>>();
  const results: ApplyResult[] = [];
  for (const object of objects) {
    try {
      const { apiVersion = '', kind = '', metadata } = object;
      const { base, plural, namespaced } = await resourceOf(env, apiVersion, kind, discovery);
      if (!metadata?.name) throw new Error('metadata.name is missing');
      if (namespaced && !metadata.namespace) throw new Error('metadata.namespace is missing');
      const query = new URLSearchParams({
        fieldManager: 'helm-test',
        force: 'true',
        fieldValidation: 'Strict',
      });
      if (options.dryRun) query.set('dryRun', 'All');
      const where = namespaced ? `/namespaces/${encodeURIComponent(metadata.namespace ?? '')}` : '';
      const res = await kubeRequest(
        env,
        'PATCH',
        `${base}${where}/${plural}/${encodeURIComponent(metadata.name)}?${query}`,
        // JSON is YAML: the apply patch is the object as rendered.
        { body: JSON.stringify(object), contentType: 'application/apply-patch+yaml', token: options.token },
      );
      if (res.status >= 300) throw new Error(statusMessage(res.status, res.body));
      results.push({ object, applied: res.body as KubernetesObject });
    } catch (err) {
      results.push({ object, error: errorMessage(err) });
    }
  }
  return results;
}

/** Applies for real and throws on the first rejected object. */
export async function applyOrThrow(env: KubeTestEnv, objects: KubernetesObject[]): Promise<void> {
  const failed = (await applyObjects(env, objects, { dryRun: false })).filter((r) => r.error);
  if (failed.length > 0) {
    throw new Error(failed.map((r) => `${describeObject(r.object)}: ${r.error}`).join('\n'));
  }
}

export async function ensureNamespace(env: KubeTestEnv, name: string): Promise<void> {
  await applyOrThrow(env, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }]);
}

/**
 * Stand-ins for the Prometheus Operator's CRDs (the real ones are not part of this repository):
 * the same group, version and names, with a schema that accepts any spec.
 */
export function monitoringTestCrds(): KubernetesObject[] {
  const crd = (kind: string, plural: string): KubernetesObject =>
    ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.monitoring.coreos.com` },
      spec: {
        group: 'monitoring.coreos.com',
        scope: 'Namespaced',
        names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
              },
            },
          },
        ],
      },
    }) as KubernetesObject;
  return [crd('ServiceMonitor', 'servicemonitors'), crd('PrometheusRule', 'prometheusrules')];
}

/** Applies CustomResourceDefinitions and waits until each is Established (served by the API). */
export async function installCrds(env: KubeTestEnv, crds: KubernetesObject[]): Promise<void> {
  await applyOrThrow(env, crds);
  const api = env.kubeConfig().makeApiClient(ApiextensionsV1Api);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    await eventually(`CRD ${name} established`, async () => {
      const current = await api.readCustomResourceDefinition({ name });
      return (current.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
    });
  }
}

export interface ChartRbac {
  /** Bearer token of the controller's ServiceAccount (TokenRequest, 1 hour). */
  controllerToken: string;
  /** Bearer token of the api's ServiceAccount. */
  apiToken: string;
  controllerServiceAccount: string;
  apiServiceAccount: string;
  /** The Lease name the controller's Role allows (HOSTPLANE_LEASE_NAME of the rendered chart). */
  leaseName: string;
}

/**
 * Renders the chart into `namespace` (created when missing), really applies its ServiceAccounts,
 * Roles and RoleBindings, and mints tokens for the controller's and the api's ServiceAccounts, so a
 * test can run the controller (or api) with exactly the permissions the chart grants.
 */
export async function installChartRbac(
  env: KubeTestEnv,
  namespace: string,
  values?: Values,
  releaseName = DEFAULT_RELEASE,
): Promise<ChartRbac> {
  const objects = await renderChart({ namespace, values, releaseName });
  const rbac = objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind ?? ''));
  await ensureNamespace(env, namespace);
  await applyOrThrow(env, rbac);

  const serviceAccount = (component: string): string => {
    const [sa] = componentObjects(rbac, 'ServiceAccount', component);
    if (!sa?.metadata?.name) throw new Error(`the chart renders no ServiceAccount for the ${component}`);
    return sa.metadata.name;
  };
  const controllerServiceAccount = serviceAccount('controller');
  const apiServiceAccount = serviceAccount('api');
  const core = env.kubeConfig().makeApiClient(CoreV1Api);
  const mint = async (name: string): Promise<string> => {
    const res = await core.createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    if (!res.status?.token) throw new Error(`TokenRequest for ${name} returned no token`);
    return res.status.token;
  };
  const [controllerToken, apiToken] = await Promise.all([
    mint(controllerServiceAccount),
    mint(apiServiceAccount),
  ]);

  const [controller] = componentObjects<KubernetesObject & { spec: PodSpecHolder }>(
    objects,
    'Deployment',
    'controller',
  );
  const leaseName = containerEnv(controller, 'HOSTPLANE_LEASE_NAME');
  if (!leaseName) throw new Error('the controller Deployment sets no HOSTPLANE_LEASE_NAME');
  return { controllerToken, apiToken, controllerServiceAccount, apiServiceAccount, leaseName };
}
