import { CoordinationV1Api } from '@kubernetes/client-node';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SITE_ID_ANNOTATION, SiteResources } from '../../src/kube/client.js';
import type { KubeTestEnv } from '../support/kube/envtest.js';
import { startKubeTestEnv } from '../support/kube/envtest.js';
import { ensureNamespace, installCrds } from '../support/kube/apply.js';
import { chartCrds } from '../support/kube/helm.js';
import { eventually } from '../support/eventually.js';
import { metricValue, rawRequest } from '../support/hostplane.js';
import { createDatabase } from '../support/postgres.js';
import { captureOutput, exited, freePort } from '../support/procs.js';

// Cluster mode through the built binary, as the chart runs it: `admin create-site` commits the
// site and creates its Site resource; `serve --role controller` leads, reconciles and reports.
const exec = promisify(execFile);
const bin = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const namespace = 'hostplane';

let env: KubeTestEnv;
let baseEnv: NodeJS.ProcessEnv;
let sites: SiteResources;

beforeAll(async () => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` (make test does) first`);
  env = await startKubeTestEnv();
  await installCrds(env, await chartCrds());
  await ensureNamespace(env, namespace);
  sites = new SiteResources(env.kubeConfig(), namespace, 'test');
  baseEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    HOSTPLANE_BASE_URL: 'http://localhost:8080',
    HOSTPLANE_SITES_DOMAIN: 'sites.test',
    DATABASE_URL: await createDatabase(inject('postgresUrl')),
    HOSTPLANE_KUBERNETES: 'true',
    HOSTPLANE_NAMESPACE: namespace,
    KUBECONFIG: env.kubeconfigPath,
    LOG_LEVEL: 'info',
  };
  // As the chart's pre-install hook does: only `migrate` (and standalone serve) migrate.
  await exec(process.execPath, [bin, 'migrate'], { env: baseEnv });
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

describe('cluster mode through the binary', () => {
  let controller: ChildProcess | undefined;
  let port: number;
  let output: () => string = () => '';

  afterAll(async () => {
    if (controller && controller.exitCode === null) {
      controller.kill('SIGKILL');
      await exited(controller);
    }
  });

  it('admin create-site commits the site, then creates its Site resource', async () => {
    const { stdout } = await exec(
      process.execPath,
      [bin, 'admin', 'create-site', '--slug', 'cli-site', '--email', 'cli@example.com', '--json'],
      { env: baseEnv },
    );
    const out = JSON.parse(stdout) as { siteId: number; slug: string; apiKey: string; resource: unknown };
    expect(out).toMatchObject({
      slug: 'cli-site',
      siteUrl: 'http://cli-site.sites.test:8080',
      resource: { namespace, name: 'cli-site', result: 'created' },
    });
    const resource = await sites.get('cli-site');
    expect(resource?.metadata.annotations?.[SITE_ID_ANNOTATION]).toBe(String(out.siteId));
    expect(resource?.spec).toMatchObject({ slug: 'cli-site', deletionPolicy: 'Retain' });
  });

  it('admin create-site still succeeds when the Site resource cannot be created (the resync will)', async () => {
    const { stdout } = await exec(
      process.execPath,
      [bin, 'admin', 'create-site', '--slug', 'deferred-site', '--email', 'cli@example.com', '--json'],
      // A namespace that does not exist: the create answers 404.
      { env: { ...baseEnv, HOSTPLANE_NAMESPACE: 'no-such-namespace' } },
    );
    // stdout stays one JSON object (warnings go to stderr).
    expect(JSON.parse(stdout)).toMatchObject({
      slug: 'deferred-site',
      resource: { namespace: 'no-such-namespace', name: 'deferred-site', result: 'deferred' },
    });
  });

  it('serve --role controller answers /healthz, /readyz and /metrics, leads and reconciles', async () => {
    port = await freePort();
    const metricsPort = await freePort();
    controller = spawn(process.execPath, [bin, 'serve', '--role', 'controller'], {
      env: {
        ...baseEnv,
        PORT: String(port),
        HOSTPLANE_METRICS_PORT: String(metricsPort),
        HOSTPLANE_POD_NAME: 'controller-e2e',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    output = captureOutput(controller);
    const get = (p: string) => rawRequest(port, p, { headers: { host: `127.0.0.1:${port}` } });
    await eventually(
      '/readyz to answer 200',
      async () => (await get('/readyz')).status === 200,
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output()}`);
    });
    expect((await get('/healthz')).status).toBe(200);
    const ready = await eventually('the Site to be Ready', async () => {
      const site = await sites.get('cli-site');
      return site?.status?.conditions?.some((c) => c.status === 'True') ? site : undefined;
    });
    expect(ready.status?.url).toBe('http://cli-site.sites.test:8080');
    // The resync gives the site whose resource could not be created one.
    const deferred = await eventually('a Site resource for deferred-site', () => sites.get('deferred-site'));
    expect(deferred.spec.slug).toBe('deferred-site');
    expect((await get('/metrics')).status).toBe(404); // never on the public port
    const scrape = await rawRequest(metricsPort, '/metrics', {
      headers: { host: `127.0.0.1:${metricsPort}` },
    });
    const metrics = await scrape.text();
    expect(metrics).toMatch(/^hostplane_build_info\{version="\d+\.\d+\.\d+[^"]*"\} 1$/m);
    expect(metricValue(metrics, 'hostplane_controller_leader', { lease: 'hostplane-controller' })).toBe(1);
    expect(
      metricValue(metrics, 'hostplane_controller_reconcile_total', { controller: 'site', result: 'success' }),
    ).toBeGreaterThan(0);
    expect((await get('/api/v1/files')).status).toBe(404); // the controller serves no API
  });

  it('stops on SIGTERM with exit code 0 and releases the Lease', async () => {
    if (!controller) throw new Error('no controller running');
    const done = exited(controller);
    controller.kill('SIGTERM');
    await done;
    expect(controller.exitCode, output()).toBe(0);
    const lease = await env
      .kubeConfig()
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'hostplane-controller', namespace });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
  });
});
