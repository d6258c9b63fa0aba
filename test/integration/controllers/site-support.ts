import type { V1Ingress } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { apiStatus } from '../../../src/kube/client.js';
import type { SiteResource, SiteSpec } from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import {
  eventually,
  startClusterFixture,
  updateSiteSpec,
  type ClusterFixture,
} from '../../support/kube/cluster.js';
import { installChartRbac } from '../../support/kube/apply.js';

// What site-lifecycle.test.ts and site-claims-and-convergence.test.ts share: each file's own
// cluster (real kube-apiserver, Hostplane, the Site controller in Ingress mode), and reading and
// writing Sites and their Ingresses.

// Live bindings: set by useSiteCluster()'s beforeAll, read by the tests that import them.
export let fx: ClusterFixture;
export let controller: RunningController;

/** Starts this test file's cluster and controller before its tests and stops them after them. */
export function useSiteCluster(): void {
  beforeAll(async () => {
    fx = await startClusterFixture();
    // The controller runs as the chart's own ServiceAccount, bound by the chart's own Role: every
    // test of the file then also proves those permissions are enough.
    const rbac = await installChartRbac(fx.env, fx.namespace);
    controller = await fx.startController({ token: rbac.controllerToken });
  }, 120_000);

  afterAll(async () => {
    await fx?.stop();
  });
}

const ready = (site: SiteResource | undefined) =>
  site?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') &&
  site.status.observedGeneration === site.metadata.generation
    ? site
    : undefined;

export async function applySite(
  name: string,
  spec: Partial<SiteSpec> & { slug: string },
): Promise<SiteResource> {
  return fx.sites.create({ metadata: { name }, spec: spec as SiteSpec });
}

export const updateSpec = (name: string, change: (spec: SiteSpec) => SiteSpec) =>
  updateSiteSpec(fx, name, change);

export const waitReady = (name: string, timeoutMs?: number) =>
  eventually(`Site ${name} to be Ready`, async () => ready(await fx.sites.get(name)), timeoutMs);

export async function ingressOf(name: string): Promise<V1Ingress | undefined> {
  try {
    return await fx.networking.readNamespacedIngress({ name: `site-${name}`, namespace: fx.namespace });
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

export const hostsOf = (ingress: V1Ingress | undefined) =>
  (ingress?.spec?.rules ?? []).map((r) => r.host).sort();
