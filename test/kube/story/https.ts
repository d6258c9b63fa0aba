/**
 * The story's HTTPS steps, run once per routing mode (Ingress, then the Gateway API): the slug host
 * over HTTPS with the operator's wildcard certificate and HTTP redirected to HTTPS; a custom domain
 * attached and verified through the account API (its TXT record in the node's ACME DNS), its
 * certificate issued by Pebble through cert-manager, served over HTTPS with it (the client trusting
 * Pebble's root only); the domain removed, and its certificate, Secret and route gone.
 */
import { expect } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { helm, valuesFile } from '../../support/kube/helm.js';
import { CHART, MINUTES, NS, RELEASE, SITES_DOMAIN, type Story } from './context.js';
import {
  certificateReady,
  certificatesFor,
  httpGet,
  httpsGet,
  ownerSession,
  pebbleRoot,
  setTxt,
} from './tls.js';

const PAGE = '<h1>from a real node</h1>';
const OWNER = 'owner@example.com';

/** The slug host through the ingress: HTTPS with the wildcard certificate, HTTP → HTTPS. */
export async function slugOverHttps(story: Story, operatorCa: string, slug: string): Promise<void> {
  const host = `${slug}.${SITES_DOMAIN}`;
  const page = await eventually(
    `https://${host}/ through the ingress`,
    async () => {
      const a = await httpsGet(story, host, operatorCa);
      return a.status === 200 ? a : undefined;
    },
    2 * MINUTES,
  );
  expect(page.body).toBe(PAGE);
  expect(page.peer?.subjectaltname).toBe(`DNS:*.${SITES_DOMAIN}`);
  const plain = await httpGet(story, host, '/index.html?x=1');
  expect([301, 308], JSON.stringify(plain)).toContain(plain.status);
  expect(plain.location).toBe(`https://${host}/index.html?x=1`);
}

async function accountCall(story: Story, token: string, method: string, path: string) {
  return story.api(path, { method, headers: { 'x-api-key': '', authorization: `Bearer ${token}` } });
}

async function siteId(story: Story, token: string, slug: string): Promise<number> {
  const { res, body } = await accountCall(story, token, 'GET', '/api/v1/account/sites');
  expect(res.status, JSON.stringify(body)).toBe(200);
  const site = (body.sites as { id: number; slug: string }[]).find((s) => s.slug === slug);
  if (!site) throw new Error(`no site ${slug} in ${JSON.stringify(body)}`);
  return site.id;
}

/**
 * Attaches `hostname` to the site through the account API, proves it with the TXT record the API
 * asks for, and waits for its certificate from Pebble and the site served on it over HTTPS.
 * Returns the timings of issuance (from the verification to the page over HTTPS).
 */
export async function customDomainIssued(
  story: Story,
  slug: string,
  hostname: string,
): Promise<{ issuedSeconds: number }> {
  const token = await ownerSession(story, OWNER);
  const id = await siteId(story, token, slug);
  const attached = await story.api(`/api/v1/account/sites/${id}/domains`, {
    json: { hostname },
    headers: { 'x-api-key': '', authorization: `Bearer ${token}` },
  });
  expect(attached.res.status, JSON.stringify(attached.body)).toBe(202);
  const proof = (attached.body.domain as { verification: { name: string; value: string } }).verification;
  await setTxt(story, proof.name, proof.value);
  // The API pods read the record through CoreDNS, which forwards the zone to challtestsrv.
  const verified = await eventually(
    `${hostname} verified`,
    async () => {
      const v = await accountCall(
        story,
        token,
        'POST',
        `/api/v1/account/sites/${id}/domains/${hostname}/verify`,
      );
      if (v.res.status === 200) return v;
      throw new Error(`${v.res.status} ${JSON.stringify(v.body)}`);
    },
    MINUTES,
  );
  expect((verified.body.domain as { status: string }).status).toBe('active');
  const t0 = Date.now();

  const cert = await certificateReady(story, hostname);
  const root = await pebbleRoot(story);
  const page = await eventually(
    `https://${hostname}/ with Pebble's certificate`,
    async () => {
      const a = await httpsGet(story, hostname, root);
      return a.status === 200 ? a : undefined;
    },
    2 * MINUTES,
  );
  expect(page.body).toBe(PAGE);
  expect(page.peer?.subjectaltname).toContain(`DNS:${hostname}`);
  // Issued by Pebble's intermediate (a client trusting the wildcard's CA would refuse it).
  expect(page.peer?.issuer.CN).toMatch(/Pebble/i);
  const secret = await story.get(`/api/v1/namespaces/${NS}/secrets/${cert.spec.secretName}`);
  expect(secret, `Secret ${cert.spec.secretName}`).toBeDefined();
  const plain = await httpGet(story, hostname, '/');
  expect([301, 308], JSON.stringify(plain)).toContain(plain.status);
  expect(plain.location).toBe(`https://${hostname}/`);
  return { issuedSeconds: Math.round((Date.now() - t0) / 100) / 10 };
}

/** Detaches `hostname`: its Certificate, its Secret and its route go; the host is served no more. */
export async function customDomainRemoved(story: Story, slug: string, hostname: string): Promise<void> {
  const token = await ownerSession(story, OWNER);
  const id = await siteId(story, token, slug);
  const secrets = (await certificatesFor(story, hostname)).map((c) => c.spec.secretName);
  expect(secrets.length, `a Certificate for ${hostname}`).toBeGreaterThan(0);
  const removed = await accountCall(
    story,
    token,
    'DELETE',
    `/api/v1/account/sites/${id}/domains/${hostname}`,
  );
  expect(removed.res.status, JSON.stringify(removed.body)).toBe(200);
  await eventually(
    `the Certificate, Secret and route of ${hostname} gone`,
    async () => {
      if ((await certificatesFor(story, hostname)).length > 0) throw new Error('a Certificate is left');
      for (const name of secrets) {
        if (await story.get(`/api/v1/namespaces/${NS}/secrets/${name}`))
          throw new Error(`Secret ${name} is left`);
      }
      const routes = await routesNaming(story, hostname);
      if (routes.length > 0) throw new Error(`routes left: ${routes.join(', ')}`);
      return true;
    },
    2 * MINUTES,
  );
  // Traefik has no route for it: its 404, whatever certificate it presents.
  await eventually(`https://${hostname}/ answered 404`, async () => {
    const a = await httpsGet(story, hostname, null, '/');
    return a.status === 404 ? true : undefined;
  });
}

/** Ingresses and HTTPRoutes of the release namespace with `hostname` among their hosts. */
async function routesNaming(story: Story, hostname: string): Promise<string[]> {
  type Ingress = { metadata: { name: string }; spec: { rules?: { host?: string }[] } };
  type Route = { metadata: { name: string }; spec: { hostnames?: string[] } };
  const ingresses = await story.list<Ingress>(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`);
  const routes = await story
    .list<Route>(`/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`)
    .catch(() => [] as Route[]);
  return [
    ...ingresses
      .filter((i) => i.spec.rules?.some((r) => r.host === hostname))
      .map((i) => `Ingress ${i.metadata.name}`),
    ...routes.filter((r) => r.spec.hostnames?.includes(hostname)).map((r) => `HTTPRoute ${r.metadata.name}`),
  ];
}

/** The ClusterIssuer of the Gateway mode: the node's Pebble issuer, its HTTP-01 answered by an HTTPRoute. */
export const GATEWAY_ISSUER = 'pebble-gateway';

/**
 * `helm upgrade` to routing.mode=gateway: the chart's Gateway (GatewayClass traefik; the slug hosts'
 * listener with the wildcard Secret, an HTTP listener redirecting to HTTPS), HTTPRoutes instead of
 * Ingresses, and the custom domains' certificates from an issuer whose HTTP-01 solver attaches an
 * HTTPRoute to that Gateway's HTTP listener.
 */
export async function switchToGateway(story: Story): Promise<void> {
  type Issuer = { spec: { acme: Record<string, unknown> } };
  const node = await story.get<Issuer>(
    `/apis/cert-manager.io/v1/clusterissuers/${story.nodeEnv('CLUSTER_ISSUER')}`,
  );
  if (!node) throw new Error('the node has no ClusterIssuer');
  const gateway = `${RELEASE}-sites`;
  const issuer = {
    apiVersion: 'cert-manager.io/v1',
    kind: 'ClusterIssuer',
    metadata: { name: GATEWAY_ISSUER },
    spec: {
      acme: {
        ...node.spec.acme,
        privateKeySecretRef: { name: `${GATEWAY_ISSUER}-account-key` },
        solvers: [
          {
            http01: {
              gatewayHTTPRoute: { parentRefs: [{ name: gateway, namespace: NS, sectionName: 'http' }] },
            },
          },
        ],
      },
    },
  };
  const created = await story.kube('POST', '/apis/cert-manager.io/v1/clusterissuers', issuer);
  expect([201, 409], JSON.stringify(created.body)).toContain(created.status);

  const values = story.values as Record<string, Record<string, unknown>>;
  story.values = {
    ...story.values,
    routing: { mode: 'gateway' },
    gateway: { create: true, className: story.nodeEnv('GATEWAY_CLASS') },
    sites: {
      ...values.sites,
      tls: { ...(values.sites!.tls as object), issuer: { kind: 'ClusterIssuer', name: GATEWAY_ISSUER } },
    },
  };
  const { file, remove } = await valuesFile(story.values);
  try {
    await helm(story.helmArgs('upgrade', RELEASE, CHART, '-f', file, '--wait', '--timeout', '10m'), {
      timeoutMs: 11 * MINUTES,
    });
  } finally {
    await remove();
  }
  // The switch converges by itself: once a Site's HTTPRoute is applied, the controller removes
  // the Ingress it had (docs/operators/ingress-and-tls.md), no kubectl delete.
  await eventually(
    "the story Site's Ingress removed by the controller",
    async () =>
      (await story.get(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses/site-story`)) === undefined,
    2 * MINUTES,
  );
  type Gateway = { status?: { conditions?: { type: string; status: string }[] } };
  await eventually(
    `Gateway ${gateway} programmed by Traefik`,
    async () => {
      const g = await story.get<Gateway>(
        `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${gateway}`,
      );
      return g?.status?.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True')
        ? g
        : undefined;
    },
    2 * MINUTES,
  );
  await eventually(
    "the Site's HTTPRoute in place of its Ingress",
    async () => {
      const ingresses = await story.list(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`);
      const routes = await routesNaming(story, `story.${SITES_DOMAIN}`);
      return ingresses.length === 0 && routes.length > 0 ? routes : undefined;
    },
    2 * MINUTES,
  );
}
