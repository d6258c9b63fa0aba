import type { SiteResource } from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import { startHostplane, type TestHostplane } from '../hostplane.js';
import { eventually, type ClusterFixture } from './cluster.js';
import { installChartRbac } from './apply.js';

/**
 * The controller and an API in cluster mode on the fixture's database, each running with the
 * chart's own ServiceAccount and Role: every test that uses them also proves those permissions
 * are enough.
 */
export async function startWithChartRbac(
  fx: ClusterFixture,
): Promise<{ controller: RunningController; api: TestHostplane }> {
  const rbac = await installChartRbac(fx.env, fx.namespace);
  const controller = await fx.startController({ token: rbac.controllerToken });
  const api = await startHostplane('postgres+s3', {
    env: {
      DATABASE_URL: fx.hostplane.config.databaseUrl,
      HOSTPLANE_KUBERNETES: 'true',
      HOSTPLANE_NAMESPACE: fx.namespace,
      HOSTPLANE_POD_NAME: 'api-0',
    },
    kubeConfig: fx.env.kubeConfig(rbac.apiToken),
  });
  return { controller, api };
}

/** Applies a Site resource (slug = name, business plan), waits until it is Ready: its id and API key. */
export async function readySite(
  fx: ClusterFixture,
  name: string,
  email: string,
): Promise<{ site: SiteResource; siteId: number; apiKey: string }> {
  await fx.sites.create({
    metadata: { name },
    spec: { slug: name, owner: { email, plan: 'business' } } as SiteResource['spec'],
  });
  const site = await eventually(`Site ${name} to be Ready`, async () => {
    const s = await fx.sites.get(name);
    return s?.status?.conditions?.[0]?.status === 'True' ? s : undefined;
  });
  const secret = await fx.core.readNamespacedSecret({
    name: site.status?.apiKeySecretName ?? '',
    namespace: fx.namespace,
  });
  const apiKey = Buffer.from(secret.data?.apiKey ?? '', 'base64').toString('utf8');
  return { site, siteId: site.status?.siteId ?? 0, apiKey };
}
