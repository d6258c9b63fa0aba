import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller } from '../../../controllers/runtime/controller.js';
import {
  DEFAULT_KUBE_REQUEST_TIMEOUT_MS,
  KubeRequestTimeoutError,
  SiteResources,
  makeKubeApi,
} from '../../../src/kube/client.js';
import { createLogger } from '../../../src/observability/logger.js';

/**
 * A stand-in API server: `/hang` never answers, `/stall` sends headers and half a body then
 * stops, anything else answers at once. Hung requests are counted and destroyed on close.
 */
let server: http.Server;
let url: string;
const open = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url?.includes('/hang')) {
      open.add(res);
      return;
    }
    if (req.url?.includes('/stall')) {
      open.add(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"apiVersion":"hostplane.dev/v1alpha1",');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'hostplane.dev/v1alpha1', kind: 'Site', metadata: { name: 'ok' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain HTTP unless TLS verification is off.
    clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
    users: [{ name: 'user', token: 'token' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'user' }],
    currentContext: 'fake',
  });
  return kc;
}

/** How long `call` took to reject, and with what. */
async function timeRejection(call: () => Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const t0 = performance.now();
  try {
    await call();
  } catch (err) {
    return { ms: performance.now() - t0, err };
  }
  throw new Error('the call did not fail');
}

describe('the per-call deadline of Kubernetes clients', () => {
  it('defaults to 15 s', () => {
    expect(DEFAULT_KUBE_REQUEST_TIMEOUT_MS).toBe(15_000);
  });

  it('fails a call the server never answers, within the deadline', async () => {
    const sites = new SiteResources(kubeConfig(), 'hang', 'test', { requestTimeoutMs: 300 });
    const { ms, err } = await timeRejection(() => sites.get('x'));
    expect(err).toBeInstanceOf(KubeRequestTimeoutError);
    expect((err as Error).message).toMatch(
      /GET \/apis\/hostplane.dev\/v1alpha1\/namespaces\/hang\/sites\/x .*300 ms/,
    );
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(2_000);
  });

  it('fails a call whose answer stops halfway (the body is within the deadline too)', async () => {
    const core = makeKubeApi(kubeConfig(), CoreV1Api, { requestTimeoutMs: 300 });
    const { ms, err } = await timeRejection(() =>
      core.readNamespacedSecret({ name: 's', namespace: 'stall' }),
    );
    expect(err).toBeInstanceOf(KubeRequestTimeoutError);
    expect(ms).toBeLessThan(2_000);
  });

  it('leaves calls that answer in time alone', async () => {
    const sites = new SiteResources(kubeConfig(), 'fine', 'test', { requestTimeoutMs: 300 });
    expect((await sites.get('ok'))?.metadata.name).toBe('ok');
  });

  it('keeps a hung call from stretching controller shutdown', async () => {
    const sites = new SiteResources(kubeConfig(), 'hang', 'test', { requestTimeoutMs: 300 });
    let started!: () => void;
    const reconciling = new Promise<void>((resolve) => (started = resolve));
    const controller = new Controller({
      name: 'hung-call',
      logger: createLogger('silent'),
      reconciler: {
        async reconcile(key) {
          started();
          await sites.get(key);
        },
      },
    });
    controller.start();
    controller.enqueue('x');
    await reconciling;
    const t0 = performance.now();
    await controller.stop();
    expect(performance.now() - t0).toBeLessThan(2_000);
  });
});
