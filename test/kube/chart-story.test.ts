/**
 * The chart on a real node: `helm install` of charts/hostplane onto a single-node cluster made by
 * test/kube/node/ (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet on
 * containerd + runc, a CNI bridge, kube-proxy, CoreDNS), with the image built without Docker
 * (deploy/image/). PostgreSQL, MinIO and Mailpit run on the host, reached by the pods at the node's
 * host address. One story, step by step: each step needs the ones before it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { helm, valuesFile } from '../support/kube/helm.js';
import { listMessages, readMessage } from '../support/mailpit.js';
import { CHART, MINUTES, NS, RELEASE, RELEASE_KINDS, seconds, Story, type Obj } from './story/context.js';
import { loseShardForGood, shardReturns, type FailoverMeasurement } from './story/failover.js';
import {
  dashboardEmptyPanels,
  everyPodScraped,
  ruleMetricsMissing,
  startNodePrometheus,
} from './story/monitoring.js';
import { databaseOutage } from './story/outage.js';
import { setUpStory } from './story/setup.js';
import { customDomainIssued, customDomainRemoved, slugOverHttps, switchToGateway } from './story/https.js';
import { driveDashboardTraffic } from './story/traffic.js';

/** The failover's wait in the story: short, so a lost shard's databases answer within 30 s. */
const FAILOVER_AFTER_MS = 15_000;

describe('the chart on a real node', () => {
  const story = new Story();
  const { api, site, sqlite, pods, kube, get, list } = {
    api: story.api.bind(story),
    site: story.site.bind(story),
    sqlite: story.sqlite.bind(story),
    pods: story.pods.bind(story),
    kube: story.kube.bind(story),
    get: story.get.bind(story),
    list: story.list.bind(story),
  };
  const helmArgs = story.helmArgs.bind(story);
  /** How long each new step took, for the time they add to `make test-node`. */
  const stepSeconds: Record<string, number> = {};
  const timed = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    try {
      return await run();
    } finally {
      stepSeconds[name] = seconds(Date.now() - t0);
      console.log(`[story] step "${name}": ${stepSeconds[name]} s`);
    }
  };

  beforeAll(async () => {
    await story.clearFailures();
    await setUpStory(story, { sqlite: { failoverAfterMs: FAILOVER_AFTER_MS } });
  }, 30 * MINUTES);

  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') await story.writeDownFailure(task.name);
  });

  afterAll(async () => {
    await story.prometheus?.stop();
    await story.node?.stop();
    await Promise.all([story.postgres?.stop(), story.minio?.stop(), story.mailpit?.close()]);
  }, 5 * MINUTES);

  it(
    'installs: the migrate Job completes and every pod becomes Ready through its real probes',
    async () => {
      const { file, remove } = await valuesFile(story.values);
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
      // The pre-install hook ran against PostgreSQL: the schema is there. Through the Service, once
      // kube-proxy routes it to the new pods (helm returns when they are Ready, maybe a second before).
      await eventually('/readyz through the Service', async () => {
        const { res } = await api('/readyz', { headers: {} });
        return res.status === 200;
      });
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
    "a real Prometheus on the host scrapes every pod and Litestream through the ServiceMonitor, with the chart's rules loaded",
    async () => {
      await timed('prometheus', async () => {
        story.prometheus = await startNodePrometheus(story);
        const up = await everyPodScraped(story);
        // api ×2, edge, controller ×2, sqlite ×2 on metrics; the two shards' Litestream.
        expect(up.length).toBeGreaterThanOrEqual(9);
      });
    },
    5 * MINUTES,
  );

  it(
    'adopts a Site applied with kubectl and serves a page uploaded through the API Service',
    async () => {
      const applied = await story.node.kubectl(
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
      story.apiKey = Buffer.from(secret?.data.apiKey ?? '', 'base64').toString('utf8');
      expect(story.apiKey).not.toBe('');

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

  for (const mode of ['ingress', 'gateway'] as const) {
    it(
      `${mode === 'ingress' ? 'Ingress' : 'Gateway API'}: the site through Traefik on the node's address over HTTPS with the wildcard certificate, HTTP redirected to HTTPS`,
      async () => {
        if (mode === 'gateway')
          await timed('gateway: helm upgrade to routing.mode=gateway', () => switchToGateway(story));
        await timed(`${mode}: slug host over HTTPS`, () => slugOverHttps(story, story.operatorCa, 'story'));
      },
      14 * MINUTES,
    );

    it(
      `${mode === 'ingress' ? 'Ingress' : 'Gateway API'}: a custom domain verified through the account API gets its certificate from Pebble through cert-manager and is served on it over HTTPS; removed, its certificate and route go`,
      async () => {
        const domain = `${mode}.${story.nodeEnv('ACME_ZONE')}`;
        await timed(`${mode}: custom domain issued`, () => customDomainIssued(story, 'story', domain));
        await timed(`${mode}: custom domain removed`, () => customDomainRemoved(story, 'story', domain));
      },
      10 * MINUTES,
    );
  }

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
      const uuid = (story.formUuid = (form.body.form as { uuid: string }).uuid);
      // A new notification address follows its mailed confirmation link first.
      const confirmation = await eventually('the confirmation link in Mailpit', async () => {
        const mails = await listMessages(story.mailpit, 'inbox@example.com');
        return mails.find((m) => m.Subject.startsWith('Confirm'));
      });
      const token = (await readMessage(story.mailpit, confirmation.ID)).Text.match(/#token=([\w-]+)/)?.[1];
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
        const mails = await listMessages(story.mailpit, 'inbox@example.com');
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
      story.sqliteToken = install.body.token as string;
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
      // The shard that holds the story's database goes, with its volume.
      const db = (await story.sqliteDatabases()).find((d) => d.spec.path === 'data/app.sqlite');
      const before = (await pods('sqlite')).find((p) => p.name === db?.status?.shard);
      if (!before) throw new Error(`no sqlite pod holds data/app.sqlite (${db?.status?.shard})`);
      const pvc = `data-${before.name}`;
      // The claim goes once its pod does; the StatefulSet then makes a new, empty one.
      await kube('DELETE', `/api/v1/namespaces/${NS}/persistentvolumeclaims/${pvc}`);
      await kube('DELETE', `/api/v1/namespaces/${NS}/pods/${before.name}`);
      await eventually(
        'a new shard pod Ready beside the other',
        async () => {
          const now = await pods('sqlite');
          const again = now.find((p) => p.name === before.name);
          return now.length === 2 && again && again.uid !== before.uid && now.every((p) => p.ready)
            ? now
            : undefined;
        },
        5 * MINUTES,
      );
      // Restored from MinIO: by the new shard, or by the other one if the failover's wait ran out first.
      const rows = await eventually('the restored row', async () => {
        const res = await sqlite('query', 'SELECT body FROM notes');
        return res.res.status === 200 ? res.body : undefined;
      });
      expect(JSON.stringify(rows)).toContain('kept across restarts');
    },
    6 * MINUTES,
  );

  let failover: FailoverMeasurement | undefined;
  it(
    'loses a shard for good under a write load: its databases answer from the other within 30 s, nothing acknowledged lost, HostplaneSqliteShardLost fires and resolves',
    async () => {
      failover = await timed('failover', () => loseShardForGood(story));
      await timed('shard returns', () => shardReturns(story, failover!.databases));
    },
    15 * MINUTES,
  );

  it(
    "every dashboard panel shows data and every alert rule reads series the node's Prometheus has",
    async () => {
      await timed('dashboard', async () => {
        await driveDashboardTraffic(story);
        const empty = await eventually(
          'every dashboard query returning series',
          async () => {
            const missing = await dashboardEmptyPanels(story.prometheus!);
            return missing.length === 0 ? missing : undefined;
          },
          3 * MINUTES,
        ).catch(async (err: unknown) => {
          throw new Error(
            `${(err as Error).message}: ${(await dashboardEmptyPanels(story.prometheus!)).join('; ')}`,
          );
        });
        expect(empty).toEqual([]);
        expect(await ruleMetricsMissing(story.prometheus!)).toEqual([]);
      });
    },
    5 * MINUTES,
  );

  it(
    'HostplaneHighHttp5xxRatio fires while the host PostgreSQL is down under traffic, and resolves after it is back',
    async () => {
      await timed('5xx alert', () => databaseOutage(story));
    },
    10 * MINUTES,
  );

  it(
    'rolls every pod on `helm upgrade` with a changed value, without losing data',
    async () => {
      const before = new Set(
        (await Promise.all(['api', 'edge', 'controller', 'sqlite'].map(pods))).flat().map((p) => p.uid),
      );
      const { file, remove } = await valuesFile({
        ...story.values,
        config: { ...(story.values.config as object), logLevel: 'debug' },
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
      // Through the edge's Service, once kube-proxy routes it to the new pod.
      const page = await eventually('the page after the upgrade', async () => {
        const res = await site('story');
        return res.status === 200 ? res.text() : undefined;
      });
      expect(page).toBe('<h1>from a real node</h1>');
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
      const left = await eventually(
        'nothing left of the release',
        async () => {
          const found = (
            await Promise.all(
              RELEASE_KINDS.map((k) => list(k).then((items) => items.map((i) => `${k}: ${i.metadata.name}`))),
            )
          ).flat();
          if (found.length > 0) throw new Error(`still there: ${found.join(', ')}`);
          return found;
        },
        3 * MINUTES,
      );
      expect(left).toEqual([]);
      console.log(
        `[story] new steps (s): ${JSON.stringify(stepSeconds)}; failover ${JSON.stringify(failover)}`,
      );
    },
    10 * MINUTES,
  );
});
