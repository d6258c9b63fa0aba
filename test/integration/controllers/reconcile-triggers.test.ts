import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileTotal } from '../../../controllers/runtime/metrics.js';
import {
  resourceClient,
  type FormResource,
  type FormSpec,
  type ResourceClient,
  type SiteResource,
  type SiteSpec,
  type StatusOf,
} from '../../../src/kube/index.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';

// What brings a reconcile pass (the predicates of controllers/<kind>/setup.ts): a spec change
// does; a status write (the controller's own, or one by hand) does not. And what a pass reads
// from the caches: the Site's Ingress, counted in the API server's own metrics. The controller
// here has no periodic resync, so every pass counted comes from an informer event.

let fx: ClusterFixture;
let forms: ResourceClient<FormResource>;

beforeAll(async () => {
  fx = await startClusterFixture('triggers');
  await fx.startController({ leaderElection: false, kubernetes: { resyncMs: 3_600_000 } });
  forms = resourceClient('Form', fx.env.kubeConfig(), fx.namespace, 'test');
}, 120_000);

afterAll(async () => {
  await fx?.stop();
});

/** Passes the controller finished (whatever their result). */
async function passes(controller: 'site' | 'form'): Promise<number> {
  const { values } = await reconcileTotal.get();
  return values.filter((v) => v.labels.controller === controller).reduce((sum, v) => sum + v.value, 0);
}

/** The pass count once it has stayed the same for a second: nothing queued, nothing running. */
async function settledPasses(controller: 'site' | 'form'): Promise<number> {
  let last = await passes(controller);
  for (;;) {
    await sleep(1_000);
    const now = await passes(controller);
    if (now === last) return now;
    last = now;
  }
}

type Reported = { metadata: { generation?: number }; status?: { observedGeneration?: number } };
const upToDate = <R extends Reported>(resource: R | undefined) =>
  resource && resource.status?.observedGeneration === resource.metadata.generation ? resource : undefined;

/** A status written as the controller would, with a Ready message no pass would write. */
async function writeStatusByHand<R extends SiteResource | FormResource>(
  client: ResourceClient<R>,
  resource: R,
): Promise<void> {
  const conditions = (resource.status?.conditions ?? []).map((c) => ({ ...c, message: 'written by hand' }));
  await client.replaceStatus(resource, { ...resource.status, conditions } as StatusOf<R>);
}

/** GETs of single Ingresses the API server has answered, from its own metrics. */
async function ingressGets(): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(
      `${fx.env.server}/metrics`,
      { ca: fx.env.caPem, headers: { authorization: `Bearer ${fx.env.adminToken}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
  return text
    .split('\n')
    .filter((line) => line.startsWith('apiserver_request_total{'))
    .filter((line) => line.includes('resource="ingresses"') && line.includes('verb="GET"'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

const readyMessage = (resource: SiteResource | FormResource | undefined) =>
  resource?.status?.conditions?.find((c) => c.type === 'Ready')?.message;

describe('a Site', () => {
  it('gets no pass from a status write, and one from a spec change', async () => {
    await fx.sites.create({ metadata: { name: 'quiet' }, spec: { slug: 'quiet' } as SiteSpec });
    const ready = await eventually('Site quiet to be Ready', async () =>
      upToDate(await fx.sites.get('quiet')),
    );
    const before = await settledPasses('site');

    await writeStatusByHand(fx.sites, (await fx.sites.get('quiet')) ?? ready);
    await sleep(1_500);
    expect(await passes('site')).toBe(before);
    expect(readyMessage(await fx.sites.get('quiet'))).toBe('written by hand');

    const current = (await fx.sites.get('quiet')) ?? ready;
    await fx.sites.replace({ ...current, spec: { ...current.spec, customDomains: ['quiet.example'] } });
    const changed = await eventually('the spec change to be reconciled', async () => {
      const site = upToDate(await fx.sites.get('quiet'));
      return site?.status?.domains?.length ? site : undefined;
    });
    expect(await passes('site')).toBeGreaterThan(before);
    expect(changed.status?.domains).toEqual([{ hostname: 'quiet.example', ready: true }]);
    expect(readyMessage(changed)).toBe('the site is routed to the edge');
  });
});

describe('a Form', () => {
  it('gets no pass from its status write nor its Site’s, and one from a spec change', async () => {
    await fx.sites.create({
      metadata: { name: 'shop' },
      spec: { slug: 'shop', owner: { email: 'shop@example.com', plan: 'business' } } as SiteSpec,
    });
    await eventually(
      'Site shop to be Ready',
      async () => upToDate(await fx.sites.get('shop'))?.status?.siteId,
    );
    await forms.create({
      metadata: { name: 'contact' },
      spec: { siteRef: { name: 'shop' }, name: 'Contact' } as FormSpec,
    });
    const ready = await eventually('Form contact to be Ready', async () => {
      const form = upToDate(await forms.get('contact'));
      return form?.status?.formId ? form : undefined;
    });
    const before = await settledPasses('form');
    await settledPasses('site');

    await writeStatusByHand(forms, (await forms.get('contact')) ?? ready);
    const site = await fx.sites.get('shop');
    if (site) await writeStatusByHand(fx.sites, site);
    await sleep(1_500);
    expect(await passes('form')).toBe(before);
    expect(readyMessage(await forms.get('contact'))).toBe('written by hand');

    const current = (await forms.get('contact')) ?? ready;
    await forms.replace({ ...current, spec: { ...current.spec, name: 'Contact us' } });
    const changed = await eventually('the spec change to be reconciled', async () =>
      upToDate(await forms.get('contact')),
    );
    expect(await passes('form')).toBeGreaterThan(before);
    expect((await fx.hostplane.services.forms.byId(changed.status?.formId ?? 0))?.name).toBe('Contact us');
    expect(readyMessage(changed)).toBe('the form accepts submissions');
  });
});

describe('the Ingress of a Site', () => {
  it('is read from the informer cache: a pass makes no GET of it', async () => {
    await fx.sites.create({ metadata: { name: 'cached' }, spec: { slug: 'cached' } as SiteSpec });
    const ready = await eventually('Site cached to be Ready', async () =>
      upToDate(await fx.sites.get('cached')),
    );
    const before = await settledPasses('site');
    const gets = await ingressGets();

    await fx.sites.patchMetadata(ready, { annotations: { 'example.com/touched': 'yes' } });
    await eventually('a pass', async () => (await passes('site')) > before);
    await settledPasses('site');
    expect(await ingressGets()).toBe(gets);
  });
});
