/**
 * What the steps of the chart's story on a real node share: the node, the host services, the
 * release's values, the credentials earlier steps made, and helpers that reach the API server,
 * the Services and the pods. test/kube/chart-story.test.ts creates one and runs the steps in order.
 */
import { appendFile, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { jsonRequest, rawRequest } from '../../support/hostplane.js';
import { helm, type Values } from '../../support/kube/helm.js';
import type { TestNode } from '../../support/kube/node.js';
import type { MailpitServer } from '../../support/mailpit.js';
import type { MinioServer } from '../../support/minio.js';
import type { PostgresServer } from '../../support/postgres.js';
import type { PrometheusServer } from '../../support/prometheus.js';
import type { BuiltImages } from '../images.js';

export const NS = 'hostplane';
export const RELEASE = 'hostplane';
export const API_HOST = 'api.hostplane.test';
export const SITES_DOMAIN = 'sites.hostplane.test';
export const CHART = 'charts/hostplane';
export const MINUTES = 60_000;
/** Where failed steps write down the namespace's pods and events; .ci/run prints it. */
export const FAILURES = '.cache/test-node/failures.txt';
/** The namespaced kinds a release may own: `helm uninstall` and garbage collection leave none. */
export const RELEASE_KINDS = [
  '/api/v1/namespaces/hostplane/pods',
  '/apis/apps/v1/namespaces/hostplane/replicasets',
  '/apis/apps/v1/namespaces/hostplane/deployments',
  '/apis/apps/v1/namespaces/hostplane/statefulsets',
  '/apis/batch/v1/namespaces/hostplane/jobs',
  '/api/v1/namespaces/hostplane/services',
  '/apis/discovery.k8s.io/v1/namespaces/hostplane/endpointslices',
  '/apis/networking.k8s.io/v1/namespaces/hostplane/ingresses',
  '/apis/gateway.networking.k8s.io/v1/namespaces/hostplane/gateways',
  '/apis/gateway.networking.k8s.io/v1/namespaces/hostplane/httproutes',
  '/apis/cert-manager.io/v1/namespaces/hostplane/certificates',
  '/apis/rbac.authorization.k8s.io/v1/namespaces/hostplane/roles',
];

export interface Obj {
  metadata: {
    name: string;
    uid?: string;
    ownerReferences?: { uid: string }[];
    labels?: Record<string, string>;
  };
  status?: Record<string, unknown>;
  spec?: Record<string, unknown>;
}
interface List<T = Obj> {
  items: T[];
}

export interface PodState {
  name: string;
  uid: string;
  ready: boolean;
  ip: string;
}

type ApiInit = { method?: string; json?: unknown; headers?: Record<string, string>; address?: string };

export class Story {
  node!: TestNode;
  postgres!: PostgresServer;
  minio!: MinioServer;
  mailpit!: MailpitServer;
  images!: BuiltImages;
  values!: Values;
  prometheus: PrometheusServer | undefined;
  apiKey = '';
  sqliteToken = '';
  formUuid = '';
  /** The CA of the operator's wildcard certificate for the slug hosts (story/tls.ts). */
  operatorCa = '';

  nodeEnv(key: string): string {
    const value = this.node.env[key];
    if (!value) throw new Error(`node.env has no ${key}`);
    return value;
  }

  async kube<T = unknown>(method: string, urlPath: string, body?: unknown, contentType?: string) {
    const res = await this.node.request(method, urlPath, body, contentType);
    return res as { status: number; body: T };
  }

  async get<T = Obj>(urlPath: string): Promise<T | undefined> {
    const res = await this.kube<T>('GET', urlPath);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${urlPath} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async list<T = Obj>(urlPath: string): Promise<T[]> {
    return (await this.get<List<T>>(urlPath))?.items ?? [];
  }

  helmArgs(...args: string[]): string[] {
    return [...args, '--kubeconfig', this.nodeEnv('KUBECONFIG'), '--namespace', NS];
  }

  /** A Service's ClusterIP (reached from the host through kube-proxy's rules). */
  async clusterIp(service: string): Promise<string> {
    const svc = await this.get<{ spec: { clusterIP: string } }>(
      `/api/v1/namespaces/${NS}/services/${service}`,
    );
    if (!svc) throw new Error(`no Service ${service}`);
    return svc.spec.clusterIP;
  }

  /** A call to the API through its Service (or `address`, e.g. one pod's IP, port 8080). */
  async api(pathAndQuery: string, init: ApiInit = {}) {
    const direct = init.address !== undefined;
    return jsonRequest(direct ? 8080 : 80, pathAndQuery, {
      ...init,
      host: API_HOST,
      address: init.address ?? (await this.clusterIp(`${RELEASE}-api`)),
      // An empty header value means: do not send it (e.g. no key on the public submission route).
      headers: Object.fromEntries(
        Object.entries({ 'x-api-key': this.apiKey, ...init.headers }).filter(([, v]) => v !== ''),
      ),
    });
  }

  async site(slug: string, pathAndQuery = '/') {
    return rawRequest(80, pathAndQuery, {
      address: await this.clusterIp(`${RELEASE}-edge`),
      headers: { host: `${slug}.${SITES_DOMAIN}` },
    });
  }

  sqlite(call: 'query' | 'exec', sql: string, params: unknown[] = [], token = this.sqliteToken) {
    return this.api(`/api/v1/sqlite/${call}`, {
      method: 'POST',
      json: { sql, params },
      headers: { 'x-sqlite-token': token, origin: `http://story.${SITES_DOMAIN}` },
    });
  }

  /** Pods of one component, and whether each is Ready. */
  async pods(component: string): Promise<PodState[]> {
    type Pod = Obj & {
      status: { phase: string; podIP?: string; conditions?: { type: string; status: string }[] };
    };
    const selector = encodeURIComponent(`app.kubernetes.io/component=${component}`);
    return (await this.list<Pod>(`/api/v1/namespaces/${NS}/pods?labelSelector=${selector}`)).map((p) => ({
      name: p.metadata.name,
      uid: p.metadata.uid ?? '',
      ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      ip: p.status.podIP ?? '',
    }));
  }

  /** A failed step writes down what the namespace looked like (.ci/run prints it last). */
  async writeDownFailure(step: string): Promise<void> {
    const now = await this.snapshot().catch((err: unknown) => `  (no snapshot: ${String(err)})`);
    await appendFile(FAILURES, `${new Date().toISOString()} ${step}\n${now}\n`);
  }

  async clearFailures(): Promise<void> {
    await rm(FAILURES, { force: true });
    await mkdir(path.dirname(FAILURES), { recursive: true });
  }

  /**
   * What the namespace looks like, in a few lines: every pod (phase, Ready, restarts, terminating)
   * and the latest Warning events. Written down when a step fails, for a CI log that keeps little.
   */
  async snapshot(): Promise<string> {
    type Pod = Obj & {
      metadata: { deletionTimestamp?: string };
      status: {
        phase: string;
        conditions?: { type: string; status: string }[];
        containerStatuses?: { restartCount: number; state?: Record<string, { reason?: string }> }[];
      };
    };
    type Event = {
      type: string;
      reason: string;
      message?: string;
      lastTimestamp?: string;
      eventTime?: string;
      involvedObject: { kind: string; name: string };
    };
    const pods = (await this.list<Pod>(`/api/v1/namespaces/${NS}/pods`)).map((p) => {
      const ready = p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      const containers = p.status.containerStatuses ?? [];
      const restarts = containers.reduce((n, c) => n + c.restartCount, 0);
      const waiting = containers.flatMap((c) => Object.values(c.state ?? {}).map((s) => s.reason ?? ''));
      const gone = p.metadata.deletionTimestamp ? ' terminating' : '';
      return `  pod ${p.metadata.name} ${p.status.phase}${ready ? ' ready' : ''} restarts=${restarts} ${waiting.filter(Boolean).join(',')}${gone}`;
    });
    const events = (await this.list<Event>(`/api/v1/namespaces/${NS}/events?fieldSelector=type%3DWarning`))
      .sort((a, b) =>
        (a.lastTimestamp ?? a.eventTime ?? '').localeCompare(b.lastTimestamp ?? b.eventTime ?? ''),
      )
      .slice(-12)
      .map(
        (e) =>
          `  event ${e.lastTimestamp ?? e.eventTime ?? ''} ${e.reason} ${e.involvedObject.kind}/${e.involvedObject.name}: ${(e.message ?? '').slice(0, 160)}`,
      );
    return [...pods, ...events].join('\n');
  }

  /** The SqliteDatabase resources of the release. */
  async sqliteDatabases() {
    type Db = Obj & {
      spec: { path: string };
      status?: {
        shard?: string;
        lastReplicatedAt?: string;
        lastMove?: { from: string; to: string; reason: string; at: string };
        conditions?: { type: string; status: string; reason?: string }[];
      };
    };
    return this.list<Db>(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/sqlitedatabases`);
  }

  /** Sets the sqlite StatefulSet's replicas (the scale subresource, as `kubectl scale` does). */
  async scaleShards(replicas: number): Promise<void> {
    const res = await this.kube(
      'PATCH',
      `/apis/apps/v1/namespaces/${NS}/statefulsets/${RELEASE}-sqlite/scale`,
      { spec: { replicas } },
      'application/merge-patch+json',
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }

  /** The release's namespace, new (a reused node may hold one from an earlier run: it goes first). */
  async freshNamespace(): Promise<void> {
    const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } };
    if ((await this.kube('POST', '/api/v1/namespaces', namespace)).status === 201) return;
    await helm(this.helmArgs('uninstall', RELEASE, '--ignore-not-found', '--wait'), {
      timeoutMs: 5 * MINUTES,
    });
    for (const plural of ['sites', 'forms', 'sqlitedatabases']) {
      for (const o of await this.list(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/${plural}`)) {
        const url = `/apis/hostplane.dev/v1alpha1/namespaces/${NS}/${plural}/${o.metadata.name}`;
        await this.kube('PATCH', url, { metadata: { finalizers: null } }, 'application/merge-patch+json');
      }
    }
    await this.kube('DELETE', `/api/v1/namespaces/${NS}`);
    await eventually(
      'the old namespace gone',
      async () => ((await this.get(`/api/v1/namespaces/${NS}`)) ? undefined : true),
      3 * MINUTES,
    );
    const res = await this.kube('POST', '/api/v1/namespaces', namespace);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

/** Seconds with one decimal, for the log lines that report measurements. */
export const seconds = (ms: number): number => Math.round(ms / 100) / 10;
