import type { KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { HELM_BIN, requireTool } from './envtest.js';

/**
 * Test helpers around the Helm chart as objects: run the real `helm` binary, render the chart,
 * parse what it renders (and the chart's CRDs) and find objects in it. Putting objects into an
 * envtest API server (apply, CRDs, the chart's RBAC) is apply.ts.
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
/** The chart's CRDs (charts/hostplane/files/crds/*.yaml, generated from src/kube/resources.ts). */
export async function chartCrds(): Promise<KubernetesObject[]> {
  const files = (await readdir(CHART_CRDS_DIR)).filter((f) => f.endsWith('.yaml')).sort();
  const objects: KubernetesObject[] = [];
  for (const file of files)
    objects.push(...parseManifests(await readFile(path.join(CHART_CRDS_DIR, file), 'utf8')));
  return objects;
}

interface EnvVar {
  name: string;
  value?: string;
}
export interface PodSpecHolder {
  template: { spec: { containers: { name: string; env?: EnvVar[] }[] } };
}

/** The literal value of an environment variable of a Deployment's first container. */
export function containerEnv(
  deployment: (KubernetesObject & { spec?: PodSpecHolder }) | undefined,
  name: string,
): string | undefined {
  return deployment?.spec?.template.spec.containers[0]?.env?.find((e) => e.name === name)?.value;
}
