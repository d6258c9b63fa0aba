/**
 * The chart on a real node: `helm install` of charts/hostplane onto a single-node cluster made by
 * test/kube/node/ (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet on
 * containerd + runc, a CNI bridge, kube-proxy, CoreDNS), with the image built without Docker
 * (deploy/image/). PostgreSQL, MinIO and Mailpit run on the host, reached by the pods at the node's
 * host address. One story, step by step: each step needs the ones before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { jsonRequest, rawRequest } from '../support/hostplane.js';
import { helm, valuesFile, type Values } from '../support/kube/helm.js';
import { startNode, type TestNode } from '../support/kube/node.js';
import { listMessages, readMessage, startMailpit, type MailpitServer } from '../support/mailpit.js';
import { createBucket, startMinio, type MinioServer } from '../support/minio.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { buildImages, type BuiltImages } from './images.js';

const NS = 'hostplane';
const RELEASE = 'hostplane';
const API_HOST = 'api.hostplane.test';
const SITES_DOMAIN = 'sites.hostplane.test';
const CHART = 'charts/hostplane';
const MINUTES = 60_000;

interface Obj {
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

describe('the chart on a real node', () => {
  let node: TestNode;
  let postgres: PostgresServer;
  let minio: MinioServer;
  let mailpit: MailpitServer;
  let images: BuiltImages;
  let values: Values;
  let apiKey = '';
  let sqliteToken = '';

  const nodeEnv = (key: string): string => {
    const value = node.env[key];
    if (!value) throw new Error(`node.env has no ${key}`);
    return value;
  };
  const kube = async <T = unknown>(method: string, urlPath: string, body?: unknown, contentType?: string) => {
    const res = await node.request(method, urlPath, body, contentType);
    return res as { status: number; body: T };
  };
  const get = async <T = Obj>(urlPath: string): Promise<T | undefined> => {
    const res = await kube<T>('GET', urlPath);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${urlPath} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const list = async <T = Obj>(urlPath: string): Promise<T[]> => (await get<List<T>>(urlPath))?.items ?? [];
  const helmArgs = (...args: string[]) => [...args, '--kubeconfig', nodeEnv('KUBECONFIG'), '--namespace', NS];

  /** A Service's ClusterIP (reached from the host through kube-proxy's rules). */
  const clusterIp = async (service: string): Promise<string> => {
    const svc = await get<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${NS}/services/${service}`);
    if (!svc) throw new Error(`no Service ${service}`);
    return svc.spec.clusterIP;
  };
  const api = async (
    pathAndQuery: string,
    init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
  ) =>
    jsonRequest(80, pathAndQuery, {
      ...init,
      host: API_HOST,
      address: await clusterIp(`${RELEASE}-api`),
      // An empty header value means: do not send it (e.g. no key on the public submission route).
      headers: Object.fromEntries(
        Object.entries({ 'x-api-key': apiKey, ...init.headers }).filter(([, v]) => v !== ''),
      ),
    });
  const site = async (slug: string, pathAndQuery = '/') =>
    rawRequest(80, pathAndQuery, {
      address: await clusterIp(`${RELEASE}-edge`),
      headers: { host: `${slug}.${SITES_DOMAIN}` },
    });
  const sqlite = (call: 'query' | 'exec', sql: string, params: unknown[] = []) =>
    api(`/api/v1/sqlite/${call}`, {
      method: 'POST',
      json: { sql, params },
      headers: { 'x-sqlite-token': sqliteToken, origin: `http://story.${SITES_DOMAIN}` },
    });

  /** Pods of one component, and whether each is Ready. */
  const pods = async (component: string) =>
    (
      await list<Obj & { status: { phase: string; conditions?: { type: string; status: string }[] } }>(
        `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/component=${component}`)}`,
      )
    ).map((p) => ({
      name: p.metadata.name,
      uid: p.metadata.uid ?? '',
      ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    }));

  /** The release's namespace, new (a reused node may hold one from an earlier run: it goes first). */
  const freshNamespace = async () => {
    const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } };
    if ((await kube('POST', '/api/v1/namespaces', namespace)).status === 201) return;
    await helm(helmArgs('uninstall', RELEASE, '--ignore-not-found', '--wait'), { timeoutMs: 5 * MINUTES });
    for (const plural of ['sites', 'forms', 'sqlitedatabases']) {
      for (const o of await list(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/${plural}`)) {
        const url = `/apis/hostplane.dev/v1alpha1/namespaces/${NS}/${plural}/${o.metadata.name}`;
        await kube('PATCH', url, { metadata: { finalizers: null } }, 'application/merge-patch+json');
      }
    }
    await kube('DELETE', `/api/v1/namespaces/${NS}`);
    await eventually(
      'the old namespace gone',
      async () => ((await get(`/api/v1/namespaces/${NS}`)) ? undefined : true),
      3 * MINUTES,
    );
    const res = await kube('POST', '/api/v1/namespaces', namespace);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };

  beforeAll(async () => {
    node = await startNode();
    const host = nodeEnv('HOST_IP');
    [images, postgres, minio, mailpit] = await Promise.all([
      buildImages(),
      startPostgres({ host }),
      startMinio({ host }),
      startMailpit({ host }),
    ]);
    await node.importImage(images.hostplane.archive, images.hostplane.ref);
    await node.importImage(images.litestream.archive, images.litestream.ref);
    const bucket = await createBucket(minio);

    const secret = (name: string, data: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: NS },
      stringData: data,
    });
    await freshNamespace();
    for (const s of [
      secret('hostplane-database', { DATABASE_URL: postgres.url }),
      secret('hostplane-s3', {
        AWS_ACCESS_KEY_ID: minio.accessKeyId,
        AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
      }),
      secret('hostplane-smtp', { SMTP_URL: mailpit.smtpUrl }),
    ]) {
      const res = await kube('POST', `/api/v1/namespaces/${NS}/secrets`, s);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }

    const [repository, tag] = splitRef(images.hostplane.ref);
    const [lsRepository, lsTag] = splitRef(images.litestream.ref);
    const small = { requests: { cpu: '10m', memory: '64Mi' } };
    values = {
      image: { repository, tag, pullPolicy: 'Never' },
      config: {
        baseUrl: `http://${API_HOST}`,
        sitesDomain: SITES_DOMAIN,
        trustProxy: 'off',
        resyncSeconds: 30,
      },
      s3: { bucket, endpoint: minio.endpoint, region: minio.region, forcePathStyle: true },
      smtp: { existingSecret: 'hostplane-smtp' },
      // No Ingress controller on this node: the test reaches the Services directly.
      ingress: { enabled: false },
      api: { replicaCount: 2, resources: small, preStopSleepSeconds: 1 },
      edge: { replicaCount: 1, autoscaling: { enabled: false }, resources: small, preStopSleepSeconds: 1 },
      controller: { replicaCount: 2, resources: small },
      sqlite: {
        replicas: 1,
        resources: small,
        persistence: { storageClassName: nodeEnv('STORAGE_CLASS'), size: '1Gi' },
        litestream: {
          image: { repository: lsRepository, tag: lsTag, pullPolicy: 'Never' },
          caBundlePath: images.litestream.caBundlePath,
        },
      },
    };
  }, 30 * MINUTES);

  afterAll(async () => {
    await node?.stop();
    await Promise.all([postgres?.stop(), minio?.stop(), mailpit?.close()]);
  }, 5 * MINUTES);

  it(
    'installs: the migrate Job completes and every pod becomes Ready through its real probes',
    async () => {
      const { file, remove } = await valuesFile(values);
      try {
        await helm(helmArgs('install', RELEASE, CHART, '-f', file, '--wait', '--timeout', '10m'), {
          timeoutMs: 11 * MINUTES,
        });
      } finally {
        await remove();
      }
      for (const component of ['api', 'edge', 'controller', 'sqlite']) {
        const ready = await pods(component);
        expect(ready.length, component).toBeGreaterThan(0);
        expect(
          ready.every((p) => p.ready),
          `${component}: ${JSON.stringify(ready)}`,
        ).toBe(true);
      }
      // The pre-install hook ran against PostgreSQL: the schema is there.
      const { res } = await api('/readyz', { headers: {} });
      expect(res.status).toBe(200);
    },
    12 * MINUTES,
  );

  it(
    'passes `helm test`',
    async () => {
      const out = await helm(helmArgs('test', RELEASE, '--timeout', '3m'), { timeoutMs: 4 * MINUTES });
      expect(out).toMatch(/Phase:\s+Succeeded/);
    },
    5 * MINUTES,
  );

  it(
    'adopts a Site applied with kubectl and serves a page uploaded through the API Service',
    async () => {
      const applied = await node.kubectl(
        ['apply', '-n', NS, '-f', '-'],
        JSON.stringify({
          apiVersion: 'hostplane.dev/v1alpha1',
          kind: 'Site',
          metadata: { name: 'story' },
          spec: { slug: 'story', owner: { email: 'owner@example.com', plan: 'business' } },
        }),
      );
      expect(applied).toContain('site.hostplane.dev/story created');
      const ready = await eventually(
        'Site story to be Ready',
        async () => {
          const s = await get<
            Obj & { status?: { conditions?: { status: string }[]; apiKeySecretName?: string } }
          >(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/sites/story`);
          return s?.status?.conditions?.[0]?.status === 'True' ? s : undefined;
        },
        2 * MINUTES,
      );
      const secret = await get<{ data: Record<string, string> }>(
        `/api/v1/namespaces/${NS}/secrets/${ready.status?.apiKeySecretName ?? ''}`,
      );
      apiKey = Buffer.from(secret?.data.apiKey ?? '', 'base64').toString('utf8');
      expect(apiKey).not.toBe('');

      const upload = await api('/api/v1/files/upload', {
        json: { path: 'index.html', content: '<h1>from a real node</h1>' },
      });
      expect(upload.res.status, JSON.stringify(upload.body)).toBe(200);
      const page = await eventually('the page through the edge Service', async () => {
        const res = await site('story');
        return res.status === 200 ? res.text() : undefined;
      });
      expect(page).toBe('<h1>from a real node</h1>');
    },
    5 * MINUTES,
  );

  it(
    'takes a form submission and mails the notification through the SMTP Secret',
    async () => {
      const form = await api('/api/v1/forms', {
        json: {
          name: 'Contact',
          notification_email: 'inbox@example.com',
          fields: [{ name: 'email', label: 'Email', type: 'email', required: true }],
        },
      });
      expect(form.res.status, JSON.stringify(form.body)).toBe(201);
      const uuid = (form.body.form as { uuid: string }).uuid;
      // A new notification address follows its mailed confirmation link first.
      const confirmation = await eventually('the confirmation link in Mailpit', async () => {
        const mails = await listMessages(mailpit, 'inbox@example.com');
        return mails.find((m) => m.Subject.startsWith('Confirm'));
      });
      const token = (await readMessage(mailpit, confirmation.ID)).Text.match(/#token=([\w-]+)/)?.[1];
      const confirmed = await api('/api/v1/forms/notification-confirm', {
        json: { token },
        headers: { 'x-api-key': '' },
      });
      expect(confirmed.res.status, JSON.stringify(confirmed.body)).toBe(200);
      const posted = await api(`/f/${uuid}`, {
        json: { email: 'visitor@example.com', _t_start: Math.floor(Date.now() / 1000) - 10, _t_trap: '' },
        headers: { 'x-api-key': '' },
      });
      expect([200, 201, 303], JSON.stringify(posted.body)).toContain(posted.res.status);
      await eventually('the notification in Mailpit', async () => {
        const mails = await listMessages(mailpit, 'inbox@example.com');
        const notices = mails.filter((m) => m.Subject.startsWith('New submission'));
        return notices.length > 0 ? notices : undefined;
      });
    },
    3 * MINUTES,
  );

  it(
    'installs a SQLite database on a shard and writes to it through an API pod',
    async () => {
      const install = await api('/api/v1/sqlite/auth/install', {
        json: { path: 'data/app.sqlite', name: 'app', requireUserAuth: false },
      });
      expect(install.res.status, JSON.stringify(install.body)).toBe(200);
      sqliteToken = install.body.token as string;
      expect(
        (await sqlite('exec', 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)')).res.status,
      ).toBe(200);
      const insert = await sqlite('exec', 'INSERT INTO notes (body) VALUES (?)', ['kept across restarts']);
      expect(insert.res.status, JSON.stringify(insert.body)).toBe(200);
      // Replicated to MinIO before the shard is taken away.
      await eventually(
        'the database replicated',
        async () => {
          const dbs = await list<
            Obj & { status?: { lastReplicatedAt?: string; conditions?: { type: string; status: string }[] } }
          >(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/sqlitedatabases`);
          return dbs.some((d) => d.status?.lastReplicatedAt) ? dbs : undefined;
        },
        2 * MINUTES,
      );
    },
    4 * MINUTES,
  );

  it(
    'brings a deleted shard back with a new volume, restores the database from MinIO and serves the data',
    async () => {
      const [before] = await pods('sqlite');
      if (!before) throw new Error('no sqlite pod');
      const pvc = `data-${before.name}`;
      // The claim goes once its pod does; the StatefulSet then makes a new, empty one.
      await kube('DELETE', `/api/v1/namespaces/${NS}/persistentvolumeclaims/${pvc}`);
      await kube('DELETE', `/api/v1/namespaces/${NS}/pods/${before.name}`);
      await eventually(
        'a new shard pod Ready',
        async () => {
          const [now, ...more] = await pods('sqlite');
          return now && more.length === 0 && now.uid !== before?.uid && now.ready ? now : undefined;
        },
        5 * MINUTES,
      );
      const rows = await eventually('the restored row', async () => {
        const res = await sqlite('query', 'SELECT body FROM notes');
        return res.res.status === 200 ? res.body : undefined;
      });
      expect(JSON.stringify(rows)).toContain('kept across restarts');
    },
    6 * MINUTES,
  );

  it(
    'rolls every pod on `helm upgrade` with a changed value, without losing data',
    async () => {
      const before = new Set(
        (await Promise.all(['api', 'edge', 'controller', 'sqlite'].map(pods))).flat().map((p) => p.uid),
      );
      const { file, remove } = await valuesFile({
        ...values,
        config: { ...(values.config as object), logLevel: 'debug' },
      });
      try {
        await helm(helmArgs('upgrade', RELEASE, CHART, '-f', file, '--wait', '--timeout', '10m'), {
          timeoutMs: 11 * MINUTES,
        });
      } finally {
        await remove();
      }
      // helm returns once the new pods are Ready; the old ones may still be in their preStop sleep.
      await eventually(
        'only new pods, all Ready',
        async () => {
          const after = (await Promise.all(['api', 'edge', 'controller', 'sqlite'].map(pods))).flat();
          return after.length >= 6 && after.every((p) => p.ready && !before.has(p.uid));
        },
        2 * MINUTES,
      );
      expect(await (await site('story')).text()).toBe('<h1>from a real node</h1>');
      const rows = await eventually('the row after the upgrade', async () => {
        const res = await sqlite('query', 'SELECT body FROM notes');
        return res.res.status === 200 ? res.body : undefined;
      });
      expect(JSON.stringify(rows)).toContain('kept across restarts');
    },
    12 * MINUTES,
  );

  it(
    '`helm uninstall` leaves no orphans: garbage collection removes what the release owned',
    async () => {
      // The Site's finalizer needs the controller: delete the resources first, as the README says.
      await kube('DELETE', `/apis/hostplane.dev/v1alpha1/namespaces/${NS}/sites/story`);
      await eventually(
        'the Site gone',
        async () =>
          (await get(`/apis/hostplane.dev/v1alpha1/namespaces/${NS}/sites/story`)) ? undefined : true,
        2 * MINUTES,
      );
      await helm(helmArgs('uninstall', RELEASE, '--wait', '--timeout', '5m'), { timeoutMs: 6 * MINUTES });
      const kinds = [
        '/api/v1/namespaces/hostplane/pods',
        '/apis/apps/v1/namespaces/hostplane/replicasets',
        '/apis/apps/v1/namespaces/hostplane/deployments',
        '/apis/apps/v1/namespaces/hostplane/statefulsets',
        '/apis/batch/v1/namespaces/hostplane/jobs',
        '/api/v1/namespaces/hostplane/services',
        '/apis/discovery.k8s.io/v1/namespaces/hostplane/endpointslices',
        '/apis/networking.k8s.io/v1/namespaces/hostplane/ingresses',
        '/apis/rbac.authorization.k8s.io/v1/namespaces/hostplane/roles',
      ];
      const left = await eventually(
        'nothing left of the release',
        async () => {
          const found = (
            await Promise.all(
              kinds.map((k) => list(k).then((items) => items.map((i) => `${k}: ${i.metadata.name}`))),
            )
          ).flat();
          return found.length === 0 ? found : undefined;
        },
        3 * MINUTES,
      );
      expect(left).toEqual([]);
    },
    10 * MINUTES,
  );
});

function splitRef(ref: string): [string, string] {
  const at = ref.lastIndexOf(':');
  return [ref.slice(0, at), ref.slice(at + 1)];
}
