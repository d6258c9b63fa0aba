import type { KubernetesObject } from '@kubernetes/client-node';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { applyObjects, ensureNamespace } from '../../support/kube/apply.js';
import { CHART_DIR, describeObject, parseManifests, type Values } from '../../support/kube/helm.js';
import { deployment, env, envVar, NAMESPACE, renderAndValidate, useChartTestEnv } from './chart-support.js';

// What deploy/ ships beside the chart, against the real tools: the kind values (rendered and
// validated by a real kube-apiserver like chart-values.test.ts) and the kind PostgreSQL and MinIO
// manifests they rely on, the kind cluster config, the example Site resources (dry-run through the
// CRD) and the Dockerfile.

useChartTestEnv();

describe('deploy/: kind values and manifests, example Sites, Dockerfile', () => {
  const repo = (file: string) => path.join(CHART_DIR, '..', '..', file);
  const readManifests = async (file: string) => parseManifests(await readFile(repo(file), 'utf8'));

  it('the kind values render and validate, and reference the Secrets of the kind PostgreSQL and MinIO', async () => {
    const values = parse(await readFile(repo('deploy/kind/values.yaml'), 'utf8')) as Values;
    const objects = await renderAndValidate(values);
    expect(deployment(objects, 'controller').spec.template.spec.containers[0]?.image).toBe('hostplane:dev');

    const namespace = 'hostplane-kind';
    await ensureNamespace(env, namespace);
    const infra = [
      ...(await readManifests('deploy/kind/postgres.yaml')),
      ...(await readManifests('deploy/kind/minio.yaml')),
    ].map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
    const results = await applyObjects(env, infra, { dryRun: true });
    expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);

    // Every Secret key the chart's pods read exists in the kind Secrets.
    const secrets = new Map(
      infra
        .filter((o) => o.kind === 'Secret')
        .map((o) => [o.metadata?.name, (o as { stringData?: Record<string, string> }).stringData ?? {}]),
    );
    const [api] = deployment(objects, 'api').spec.template.spec.containers;
    const refs = (api?.env ?? []).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [],
    );
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) expect(secrets.get(ref.name), `${ref.name}/${ref.key}`).toHaveProperty(ref.key);
    // ...and the database URL points at the kind PostgreSQL Service.
    expect(secrets.get('hostplane-database')?.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(envVar(api, 'S3_ENDPOINT')?.value).toBe('http://minio:9000');
  });

  it('kind maps ports 80 and 443 to the node labelled ingress-ready', async () => {
    const cluster = parse(await readFile(repo('deploy/kind/cluster.yaml'), 'utf8')) as {
      kind: string;
      nodes: {
        kubeadmConfigPatches: string[];
        extraPortMappings: { containerPort: number; hostPort: number }[];
      }[];
    };
    expect(cluster.kind).toBe('Cluster');
    const [node] = cluster.nodes;
    expect(node?.extraPortMappings.map((m) => [m.containerPort, m.hostPort])).toEqual([
      [80, 80],
      [443, 443],
    ]);
    expect(node?.kubeadmConfigPatches.join('\n')).toContain('node-labels: "ingress-ready=true"');
  });

  it('the example Sites are valid Site resources', async () => {
    const files = (await readdir(repo('deploy/examples'))).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual(['site-basic.yaml', 'site-custom-domains-tls.yaml', 'site-delete-policy.yaml']);
    const sites: KubernetesObject[] = [];
    for (const file of files) sites.push(...(await readManifests(`deploy/examples/${file}`)));
    expect(sites.map((o) => o.kind)).toEqual(['Site', 'Site', 'Site']);
    const dryRun = await applyObjects(
      env,
      sites.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: NAMESPACE } })),
      { dryRun: true },
    );
    expect(dryRun.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);

    // The answer is the object as it would be stored: the CRD's defaults are applied.
    const specs = dryRun.map((r) => (r.applied as { spec?: Record<string, unknown> } | undefined)?.spec);
    expect(specs.map((s) => s?.deletionPolicy)).toEqual(['Retain', 'Retain', 'Delete']);
    expect(specs[1]).toEqual({
      slug: 'docs',
      customDomains: ['docs.example.com', 'www.docs.example.com'],
      tls: { issuerName: 'letsencrypt-prod', issuerKind: 'ClusterIssuer' },
      owner: { email: 'docs-team@example.com', plan: 'standard' },
      deletionPolicy: 'Retain',
    });

    // A Site the CRD must refuse, to show the dry run validates.
    const [bad] = await applyObjects(
      env,
      [
        {
          ...sites[0],
          metadata: { name: 'bad', namespace: NAMESPACE },
          spec: { slug: 'Not_A_Slug' },
        } as KubernetesObject,
      ],
      { dryRun: true },
    );
    expect(bad?.error).toMatch(/spec\.slug/);
  });

  it("the Dockerfile runs the package's bin as user 10001", async () => {
    const dockerfile = await readFile(repo('deploy/Dockerfile'), 'utf8');
    const pkg = JSON.parse(await readFile(repo('package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(dockerfile).toContain(`ENTRYPOINT ["node","${pkg.bin.hostplane}"]`);
    expect(dockerfile).toContain('CMD ["serve"]');
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });
});
