import { ApiextensionsV1Api, CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import https from 'node:https';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { eventually } from '../eventually.js';
import { HELM_BIN, requireTool, type KubeTestEnv } from './envtest.js';

/**
 * Test helpers around the Helm chart: run the real `helm` binary, render the chart, apply what it
 * renders to an envtest API server (for real or as a server-side dry-run), and install the chart's
 * RBAC so tests can act as the chart's own ServiceAccounts.
 */

export const CHART_DIR = fileURLToPath(new URL('../../../charts/hostplane/', import.meta.url));
/** The chart's copy of the generated CRDs (templates/crds.yaml renders them; `npm run crds` writes them). */
export const CHART_CRDS_DIR = path.join(CHART_DIR, 'files', 'crds');
/** The Kubernetes version helm renders for (`.Capabilities.KubeVersion`); helm is built with 1.34. */
export const KUBE_VERSION = '1.34.10';
export const DEFAULT_RELEASE = 'hostplane';

export type Values = Record<string, unknown>;

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs helm with its cache, config and data homes in a throwaway folder (nothing from the user's
 * home leaks in or out). Resolves with the exit code; never rejects on a non-zero exit.
 */
export async function runHelm(args: string[], options: { timeoutMs?: number } = {}): Promise<HelmResult> {
  requireTool(HELM_BIN);
  const home = await mkdtemp(path.join(tmpdir(), 'hostplane-helm-'));
  try {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      HELM_CACHE_HOME: path.join(home, 'cache'),
      HELM_CONFIG_HOME: path.join(home, 'config'),
      HELM_DATA_HOME: path.join(home, 'data'),
    };
    return await new Promise<HelmResult>((resolve, reject) => {
      execFile(
        HELM_BIN,
        args,
        { env, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 60_000 },
        (err, stdout, stderr) => {
          if (err && typeof err.code !== 'number') return reject(err);
          resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
        },
      );
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** Runs helm and returns its stdout; a non-zero exit throws with helm's output. */
export async function helm(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const result = await runHelm(args, options);
  if (result.code !== 0) {
    throw new Error(`helm ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

/** Writes `values` (as JSON, which is YAML) to a temp file for `helm -f`; returns it and a cleanup. */
export async function valuesFile(values: Values): Promise<{ file: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-values-'));
  const file = path.join(dir, 'values.yaml');
  await writeFile(file, JSON.stringify(values, null, 2));
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** The values the chart requires (no defaults: `helm template` fails without them). */
export const REQUIRED_VALUES: Values = {
  config: { baseUrl: 'https://api.hostplane.example', sitesDomain: 'sites.hostplane.example' },
};

export interface RenderOptions {
  namespace: string;
  values?: Values;
  releaseName?: string;
}

/**
 * `helm template` of the chart (hooks, the test Pod and, with crds.enabled, the CRDs included),
 * parsed into objects. REQUIRED_VALUES come first; `values` are merged over them.
 */
export async function renderChart(options: RenderOptions): Promise<KubernetesObject[]> {
  const required = await valuesFile(REQUIRED_VALUES);
  const { file, remove } = await valuesFile(options.values ?? {});
  try {
    const out = await helm([
      'template',
      options.releaseName ?? DEFAULT_RELEASE,
      CHART_DIR,
      '--namespace',
      options.namespace,
      '--kube-version',
      KUBE_VERSION,
      '--values',
      required.file,
      '--values',
      file,
    ]);
    return parseManifests(out);
  } finally {
    await remove();
    await required.remove();
  }
}

/** Parses a multi-document YAML stream; empty documents are dropped, YAML errors throw. */
export function parseManifests(text: string): KubernetesObject[] {
  const objects: KubernetesObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0)
      throw new Error(`invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    objects.push(value as KubernetesObject);
  }
  return objects;
}

/** The one object of `kind` (and `name`, when given); throws when there is none or several. */
export function findObject<T extends KubernetesObject = KubernetesObject>(
  objects: KubernetesObject[],
  kind: string,
  name?: string,
): T {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  if (found.length !== 1) {
    throw new Error(`expected one ${kind}${name ? ` named ${name}` : ''}, found ${found.length}`);
  }
  return found[0] as T;
}

/** The objects of a component (label app.kubernetes.io/component) and kind. */
export function componentObjects<T extends KubernetesObject = KubernetesObject>(
  objects: KubernetesObject[],
  kind: string,
  component: string,
): T[] {
  return objects.filter(
    (o) => o.kind === kind && o.metadata?.labels?.['app.kubernetes.io/component'] === component,
  ) as T[];
}

export const describeObject = (o: KubernetesObject): string =>
  `${o.kind}/${o.metadata?.name ?? '?'}${o.metadata?.namespace ? ` in ${o.metadata.namespace}` : ''}`;

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

/** The chart's CRDs (charts/hostplane/files/crds/*.yaml, generated from src/kube/resources.ts). */
export async function chartCrds(): Promise<KubernetesObject[]> {
  const files = (await readdir(CHART_CRDS_DIR)).filter((f) => f.endsWith('.yaml')).sort();
  const objects: KubernetesObject[] = [];
  for (const file of files)
    objects.push(...parseManifests(await readFile(path.join(CHART_CRDS_DIR, file), 'utf8')));
  return objects;
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

interface EnvVar {
  name: string;
  value?: string;
}
interface PodSpecHolder {
  template: { spec: { containers: { name: string; env?: EnvVar[] }[] } };
}

/** The literal value of an environment variable of a Deployment's first container. */
export function containerEnv(
  deployment: (KubernetesObject & { spec?: PodSpecHolder }) | undefined,
  name: string,
): string | undefined {
  return deployment?.spec?.template.spec.containers[0]?.env?.find((e) => e.name === name)?.value;
}
