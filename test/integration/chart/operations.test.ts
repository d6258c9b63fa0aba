import type { KubernetesObject } from '@kubernetes/client-node';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { applyObjects, kubeRequest } from '../../support/kube/apply.js';
import {
  CHART_CRDS_DIR,
  CHART_DIR,
  KUBE_VERSION,
  REQUIRED_VALUES,
  describeObject,
  findObject,
  helm,
  parseManifests,
  renderChart,
  runHelm,
  valuesFile,
  type Values,
} from '../../support/kube/helm.js';
import { eventually } from '../../support/eventually.js';

// The chart's operations items against the real helm and a real kube-apiserver: the CRDs as
// templates (upgraded by `helm upgrade`, kept by `helm uninstall`), the required values, the
// scheduling of the migrate Job and the test Pod, and a runbook page in docs/sre/runbooks/ for every alert.

const NAMESPACE = 'hostplane-ops';
const REPO_CRDS_DIR = path.join(CHART_DIR, '..', '..', 'crds');
const KEEP = 'helm.sh/resource-policy';

let env: KubeTestEnv;

beforeAll(async () => {
  env = await startKubeTestEnv();
});

afterAll(async () => {
  await env?.stop();
});

/** `helm template` with exactly these values (no REQUIRED_VALUES added). */
async function templateWith(values: Values): Promise<{ code: number; output: string }> {
  const { file, remove } = await valuesFile(values);
  try {
    const args = ['template', 'hostplane', CHART_DIR, '--kube-version', KUBE_VERSION, '--values', file];
    const result = await runHelm(args);
    return { code: result.code, output: result.stdout + result.stderr };
  } finally {
    await remove();
  }
}

describe('config.baseUrl and config.sitesDomain are required', () => {
  const baseUrl = 'https://api.example.org';
  it.each([
    ['neither', {}, 'config.baseUrl is required'],
    [
      'an empty base URL',
      { config: { baseUrl: '', sitesDomain: 'sites.example.org' } },
      'config.baseUrl is required',
    ],
    ['no sites domain', { config: { baseUrl } }, 'config.sitesDomain is required'],
  ])('helm template with %s fails and says which', async (_what, values, message) => {
    const { code, output } = await templateWith(values);
    expect(code).not.toBe(0);
    expect(output).toContain(message);
  });

  it('helm install fails without them; helm lint reports them and passes with them', async () => {
    const install = await runHelm([
      'install',
      'unconfigured',
      CHART_DIR,
      '--kubeconfig',
      env.kubeconfigPath,
      '--namespace',
      'default',
    ]);
    expect(install.code).not.toBe(0);
    expect(install.stdout + install.stderr).toContain('config.baseUrl is required');
    // Helm lints a chart with required values by reporting each missing one (not as a failure).
    const bare = await runHelm(['lint', '--strict', CHART_DIR]);
    expect(bare.stdout + bare.stderr).toContain('Missing required value: config.baseUrl is required');
    expect(bare.stdout + bare.stderr).toContain('Missing required value: config.sitesDomain is required');
    const required = await valuesFile(REQUIRED_VALUES);
    try {
      const ok = await runHelm(['lint', '--strict', CHART_DIR, '--values', required.file]);
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
      expect(ok.stdout + ok.stderr).not.toContain('Missing required value');
    } finally {
      await required.remove();
    }
  });

  it('the kind values carry both', async () => {
    const kind = await readFile(path.join(CHART_DIR, '..', '..', 'deploy', 'kind', 'values.yaml'), 'utf8');
    const { code, output } = await templateWith(parse(kind) as Values);
    expect(code, output).toBe(0);
  });
});

type Crd = KubernetesObject & {
  spec: { versions: { schema: { openAPIV3Schema: { description?: string } } }[] };
};

async function crdFilesIn(dir: string): Promise<Map<string, KubernetesObject>> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const out = new Map<string, KubernetesObject>();
  for (const file of files) {
    for (const o of parseManifests(await readFile(path.join(dir, file), 'utf8')))
      out.set(o.metadata?.name ?? '', o);
  }
  return out;
}

const crdsOf = (objects: KubernetesObject[]) => objects.filter((o) => o.kind === 'CustomResourceDefinition');

describe('CRDs as templates', () => {
  it('the chart has no crds/ directory (Helm would install them a second way, and never upgrade them)', () => {
    expect(existsSync(path.join(CHART_DIR, 'crds'))).toBe(false);
  });

  it('rendered by default: the generated CRDs, with the chart labels and the keep annotation', async () => {
    const generated = await crdFilesIn(REPO_CRDS_DIR);
    expect(await crdFilesIn(CHART_CRDS_DIR)).toEqual(generated);
    const crds = crdsOf(await renderChart({ namespace: NAMESPACE }));
    expect(crds.map((c) => c.metadata?.name).sort()).toEqual([...generated.keys()].sort());
    for (const crd of crds) {
      const source = generated.get(crd.metadata?.name ?? '');
      const { labels, annotations, ...metadata } = crd.metadata ?? {};
      // Apart from labels and annotations, exactly the generated object (nothing lost in the round trip).
      expect({ ...crd, metadata }).toEqual({
        ...source,
        metadata: { name: source?.metadata?.name },
      });
      expect(labels).toMatchObject({
        ...source?.metadata?.labels,
        'app.kubernetes.io/instance': 'hostplane',
      });
      expect(annotations).toEqual({ [KEEP]: 'keep' });
    }
    // ...and the API server accepts them as they are rendered.
    const results = await applyObjects(env, crds, { dryRun: true });
    expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);
  });

  it('crds.keep=false drops the annotation; crds.enabled=false renders no CRD', async () => {
    const unkept = crdsOf(await renderChart({ namespace: NAMESPACE, values: { crds: { keep: false } } }));
    expect(unkept).toHaveLength(3);
    for (const crd of unkept) expect(crd.metadata?.annotations?.[KEEP]).toBeUndefined();
    const none = await renderChart({ namespace: NAMESPACE, values: { crds: { enabled: false } } });
    expect(crdsOf(none)).toEqual([]);
    expect(none.map((o) => o.kind)).toContain('Deployment');
  });

  it('helm upgrade updates them; helm uninstall keeps them and the Sites in them (with keep)', async () => {
    const kube = ['--kubeconfig', env.kubeconfigPath, '--namespace', NAMESPACE];
    const required = await valuesFile(REQUIRED_VALUES);
    const copy = await mkdtemp(path.join(tmpdir(), 'hostplane-chart-'));
    const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sites.hostplane.dev';
    const sitesPath = `/apis/hostplane.dev/v1alpha1/namespaces/${NAMESPACE}/sites`;
    try {
      // --no-hooks: no kubelet here to run the migrate Job.
      const install = ['--no-hooks', '--create-namespace', '--values', required.file, ...kube];
      await helm(['install', 'hostplane', CHART_DIR, ...install]);
      await eventually(
        'the Site CRD served',
        async () => (await kubeRequest(env, 'GET', sitesPath)).status === 200,
      );

      // The next chart version changes the Site CRD: the upgrade must carry the change to the server.
      await cp(CHART_DIR, copy, { recursive: true });
      const file = path.join(copy, 'files', 'crds', 'sites.hostplane.dev.yaml');
      const changed = parse(await readFile(file, 'utf8')) as Crd;
      const description = 'Changed by the next chart version.';
      for (const version of changed.spec.versions) version.schema.openAPIV3Schema.description = description;
      await writeFile(file, stringify(changed));
      await helm(['upgrade', 'hostplane', copy, '--no-hooks', '--values', required.file, ...kube]);
      const upgraded = (await kubeRequest(env, 'GET', crdPath)).body as Crd;
      expect(upgraded.spec.versions[0]?.schema.openAPIV3Schema.description).toBe(description);

      const site = {
        apiVersion: 'hostplane.dev/v1alpha1',
        kind: 'Site',
        metadata: { name: 'docs' },
        spec: { slug: 'docs' },
      };
      expect((await kubeRequest(env, 'POST', sitesPath, { body: JSON.stringify(site) })).status).toBe(201);
      await helm(['uninstall', 'hostplane', ...kube]);
      expect((await kubeRequest(env, 'GET', crdPath)).status).toBe(200);
      expect((await kubeRequest(env, 'GET', `${sitesPath}/docs`)).status).toBe(200);

      // Without keep (same release name: Helm adopts the kept CRDs), uninstall deletes them.
      await helm(['install', 'hostplane', CHART_DIR, ...install, '--set', 'crds.keep=false']);
      await helm(['uninstall', 'hostplane', ...kube]);
      await eventually(
        'the Site CRD deleted',
        async () => (await kubeRequest(env, 'GET', crdPath)).status === 404,
      );
    } finally {
      await required.remove();
      await rm(copy, { recursive: true, force: true });
    }
  });
});

interface Scheduling {
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: unknown;
  imagePullSecrets?: { name: string }[];
}
type PodHolder = KubernetesObject & { spec: Scheduling & { template?: { spec: Scheduling } } };
const schedulingOf = (o: KubernetesObject): Scheduling => {
  const { spec } = o as PodHolder;
  const pod = spec.template?.spec ?? spec;
  return {
    nodeSelector: pod.nodeSelector,
    tolerations: pod.tolerations,
    affinity: pod.affinity,
    imagePullSecrets: pod.imagePullSecrets,
  };
};

describe('scheduling of the migrate Job and the test Pod', () => {
  const global: Scheduling = {
    nodeSelector: { pool: 'general' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'hostplane', effect: 'NoSchedule' }],
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }],
        },
      },
    },
    imagePullSecrets: [{ name: 'regcred' }],
  };
  const own: Scheduling = {
    nodeSelector: { pool: 'batch' },
    tolerations: [{ key: 'batch', operator: 'Exists', effect: 'NoSchedule' }],
    affinity: {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } },
        ],
      },
    },
    imagePullSecrets: [{ name: 'batch-regcred' }],
  };
  const pods = (objects: KubernetesObject[]) =>
    objects.filter((o) => ['Deployment', 'StatefulSet', 'Job', 'Pod'].includes(o.kind ?? ''));

  it('the global values reach every pod: the three Deployments, the StatefulSet, the Job and the test Pod', async () => {
    const objects = await renderChart({ namespace: NAMESPACE, values: { ...global } });
    const all = pods(objects);
    expect(all.map((o) => o.kind).sort()).toEqual([
      'Deployment',
      'Deployment',
      'Deployment',
      'Job',
      'Pod',
      'StatefulSet',
    ]);
    for (const o of all) expect(schedulingOf(o), describeObject(o)).toEqual(global);
    const results = await applyObjects(env, all, { dryRun: true });
    expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);
  });

  it("a component's own values replace the global ones for it alone", async () => {
    const objects = await renderChart({
      namespace: NAMESPACE,
      values: { ...global, migrations: { ...own }, tests: { ...own, imagePullSecrets: [] } },
    });
    expect(schedulingOf(findObject(objects, 'Job'))).toEqual(own);
    // An empty list is "not set": the test Pod falls back to the global pull secrets.
    expect(schedulingOf(findObject(objects, 'Pod'))).toEqual({
      ...own,
      imagePullSecrets: global.imagePullSecrets,
    });
    for (const o of objects.filter((x) => ['Deployment', 'StatefulSet'].includes(x.kind ?? '')))
      expect(schedulingOf(o)).toEqual(global);
    // The Job no longer borrows the api's placement.
    const apiOnly = await renderChart({
      namespace: NAMESPACE,
      values: { api: { nodeSelector: { pool: 'web' } } },
    });
    expect(schedulingOf(findObject(apiOnly, 'Job')).nodeSelector).toBeUndefined();
  });
});

describe('every alert has a runbook page in docs/sre/runbooks/', () => {
  type Rule = KubernetesObject & {
    spec: { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] };
  };
  const alertsOf = async (values: Values) => {
    const objects = await renderChart({
      namespace: NAMESPACE,
      values: { monitoring: { prometheusRule: { enabled: true, ...values } } },
    });
    return findObject<Rule>(objects, 'PrometheusRule').spec.groups.flatMap((g) => g.rules);
  };
  const DOCS = path.resolve(CHART_DIR, '../../docs');

  it("runbook_url points at the alert's own runbook page, which says what, check and do", async () => {
    const alerts = await alertsOf({});
    expect(alerts).toHaveLength(8);
    for (const { alert, annotations } of alerts) {
      expect(annotations.runbook_url, alert).toBe(
        `https://github.com/hostplane/hostplane/blob/main/docs/sre/runbooks/${alert}.md`,
      );
      const page = await readFile(path.join(DOCS, 'sre/runbooks', `${alert}.md`), 'utf8');
      expect(page.split('\n')[0], alert).toBe(`# ${alert}`);
      for (const part of ['## What it means', '## What to check', '## What to do'])
        expect(page, `${alert}: ${part}`).toContain(part);
    }
  });

  it('docsBaseUrl moves every link (a mirrored chart or documentation)', async () => {
    const base = 'https://git.example.internal/ops/hostplane/-/blob/main/docs';
    for (const { alert, annotations } of await alertsOf({ docsBaseUrl: base })) {
      expect(annotations.runbook_url).toBe(`${base}/sre/runbooks/${alert}.md`);
    }
  });
});
