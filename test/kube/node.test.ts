import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startNode, type TestNode } from '../support/kube/node.js';

/**
 * The real node of test/kube/node/ (up.sh, down.sh): pods run in containerd/runc, Services go
 * through kube-proxy, names through CoreDNS, claims bind to hostPath volumes, the controller
 * manager's Job, StatefulSet, garbage-collector and namespace controllers work, and down.sh
 * leaves nothing behind. Needs root; `make test-node` runs it (vitest.node.config.ts).
 */
const ns = 'smoke';
let node: TestNode;

const json = async <T>(args: string[]): Promise<T> =>
  JSON.parse(await node.kubectl([...args, '-o', 'json'])) as T;
const apply = (manifest: object): Promise<string> =>
  node.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
const wait = (args: string[], timeout = '120s'): Promise<string> =>
  node.kubectl(['wait', '-n', ns, `--timeout=${timeout}`, ...args]);

/** Paths kubelet, containerd and the CNI plugins create outside the state dir (see lib.sh). */
const hostPaths = [
  '/run/hostplane-node.state',
  '/run/netns',
  '/run/containerd',
  '/run/runc',
  '/var/lib/cni',
  '/var/log/containers',
  '/var/lib/kubelet',
];
let hostPathsBefore: string[] = [];

/** What the node leaves on the machine: all empty after down.sh. */
function leftovers(stateDir: string, nodeIp: string): Record<string, string[]> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mnt) => mnt.startsWith(`${stateDir}/`));
  const links = readdirSync('/sys/class/net').filter((name) => /^(hpnode0|hpcni0|veth)/.test(name));
  const chains: string[] = [];
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const rules = execFileSync(cmd, ['-t', table, '-S'], { encoding: 'utf8' });
      for (const line of rules.split('\n')) {
        if (/^-N (KUBE|CNI)-/.test(line)) chains.push(`${cmd} ${table} ${line.slice(3)}`);
      }
    }
  }
  const netns = existsSync('/run/netns')
    ? readdirSync('/run/netns').filter((name) => name.startsWith('cni-'))
    : [];
  const cgroups = existsSync('/sys/fs/cgroup/memory/kubepods')
    ? ['/sys/fs/cgroup/memory/kubepods']
    : existsSync('/sys/fs/cgroup/kubepods')
      ? ['/sys/fs/cgroup/kubepods']
      : [];
  const paths = hostPaths.filter((p) => existsSync(p) && !hostPathsBefore.includes(p));
  // Every process the node started names its state dir or the node's address (the host processes
  // Pebble and pebble-challtestsrv, kubelet, containerd and its shims, ...).
  const processes = readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid) && Number(pid) !== process.pid)
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      } catch {
        return '';
      }
    })
    .filter((cmd) => cmd.includes(`${stateDir}/`) || cmd.includes(nodeIp));
  return { mounts, links, chains, netns, cgroups, paths, processes };
}

interface Named {
  metadata: { name: string; uid: string };
}

/** GET over a new connection each time (a kept-alive one would always reach the same pod). */
function getFresh(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

const labels = (app: string): Record<string, Record<string, string>> => ({ matchLabels: { app } });

describe('the test node (kubelet, containerd, CNI, kube-proxy, CoreDNS)', () => {
  beforeAll(async () => {
    hostPathsBefore = hostPaths.filter((p) => existsSync(p));
    node = await startNode();
    console.log(`test node up in ${node.upSeconds.toFixed(1)}s (state ${node.stateDir})`);
    await node.kubectl(['create', 'namespace', ns]);
  }, 360_000);

  afterAll(async () => {
    await node?.stop();
  }, 180_000);

  let failed = false;
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') failed = true;
  });

  it('runs a pod of the pause image', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'pause', namespace: ns },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'pause', image: node.env.PAUSE_IMAGE, imagePullPolicy: 'Never' }],
      },
    });
    await wait(['--for=condition=Ready', 'pod/pause']);
    const pod = await json<{ status: { phase: string; podIP: string } }>(['get', '-n', ns, 'pod/pause']);
    expect(pod.status.phase).toBe('Running');
    expect(pod.status.podIP).toMatch(/^10\.244\.0\./);
  }, 180_000);

  it('serves a Deployment behind a ClusterIP Service to the host and, by DNS name, to a Job', async () => {
    const serve =
      'mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www';
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns },
      spec: {
        replicas: 2,
        selector: labels('web'),
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'httpd',
                image: node.env.BUSYBOX_IMAGE,
                imagePullPolicy: 'Never',
                command: ['sh', '-c', serve],
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    await wait(['--for=condition=Available', 'deployment/web']);
    const service = await json<{ spec: { clusterIP: string } }>(['get', '-n', ns, 'service/web']);
    expect(service.spec.clusterIP.startsWith('10.96.0.')).toBe(true);

    // From the host, through kube-proxy's rules: both pods answer once kube-proxy has synced the
    // Service and its endpoints (polled, each request on a new connection, balanced at random).
    const seen = new Set<string>();
    let lastError: unknown;
    for (const deadline = Date.now() + 60_000; seen.size < 2 && Date.now() < deadline;) {
      try {
        const text = await getFresh(`http://${service.spec.clusterIP}/`);
        expect(text).toMatch(/^hello from web-/);
        seen.add(text.trim());
      } catch (err) {
        // Before kube-proxy has the Service: unreachable (no rule yet) or refused (no endpoint yet).
        if (!/ECONNREFUSED|EHOSTUNREACH/.test(String(err))) throw err;
        lastError = err;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect({ seen: seen.size, lastError }).toMatchObject({ seen: 2 });

    // From another pod, by the Service's DNS name (CoreDNS), in a Job that must complete.
    await apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'client', namespace: ns },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [
              {
                name: 'wget',
                image: node.env.BUSYBOX_IMAGE,
                imagePullPolicy: 'Never',
                command: ['wget', '-q', '-O', '-', `http://web.${ns}.svc.cluster.local/`],
              },
            ],
          },
        },
      },
    });
    await wait(['--for=condition=Complete', 'job/client']);
    expect(await node.kubectl(['logs', '-n', ns, 'job/client'])).toMatch(/^hello from web-/);
  }, 240_000);

  it('binds a StatefulSet claim to a hostPath volume and keeps its data across pod deletion', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: ns },
      spec: {
        serviceName: 'db',
        replicas: 1,
        selector: labels('db'),
        template: {
          metadata: { labels: { app: 'db' } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'db',
                image: node.env.BUSYBOX_IMAGE,
                imagePullPolicy: 'Never',
                // The token is written once, by the first pod; a later pod only reads it.
                command: [
                  'sh',
                  '-c',
                  '[ -f /data/token ] || cat /proc/sys/kernel/random/uuid > /data/token; exec sleep 3600',
                ],
                volumeMounts: [{ name: 'data', mountPath: '/data' }],
              },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    });
    await wait(['--for=condition=Ready', 'pod/db-0'], '180s');
    const claim = await json<{
      status: { phase: string };
      spec: { volumeName: string; storageClassName: string };
    }>(['get', '-n', ns, 'pvc/data-db-0']);
    expect(claim.status.phase).toBe('Bound');
    expect(claim.spec.storageClassName).toBe(node.env.STORAGE_CLASS);
    expect(claim.spec.volumeName).toMatch(/^hostpath-pv-/);
    const token = (await node.kubectl(['exec', '-n', ns, 'db-0', '--', 'cat', '/data/token'])).trim();
    expect(token).toMatch(/^[0-9a-f-]{36}$/);

    const first = await json<Named>(['get', '-n', ns, 'pod/db-0']);
    await node.kubectl(['delete', '-n', ns, 'pod/db-0', '--wait=true']);
    let second = first;
    for (let i = 0; i < 240 && second.metadata.uid === first.metadata.uid; i++) {
      second = await json<Named>(['get', '-n', ns, 'pod/db-0']).catch(() => first);
      if (second.metadata.uid === first.metadata.uid) await new Promise((r) => setTimeout(r, 250));
    }
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    await wait(['--for=condition=Ready', 'pod/db-0'], '180s');
    expect((await node.kubectl(['exec', '-n', ns, 'db-0', '--', 'cat', '/data/token'])).trim()).toBe(token);
  }, 300_000);

  it('garbage-collects owned objects and deletes a namespace with everything in it', async () => {
    const replicaSets = await json<{ items: Named[] }>(['get', '-n', ns, 'replicasets', '-l', 'app=web']);
    const [replicaSet] = replicaSets.items;
    expect(replicaSets.items).toHaveLength(1);
    // Background deletion: the Deployment goes at once, the garbage collector removes the rest.
    await node.kubectl(['delete', '-n', ns, 'deployment/web', '--cascade=background']);
    await wait(['--for=delete', `replicaset/${replicaSet?.metadata.name}`]);
    await wait(['--for=delete', 'pod', '-l', 'app=web']);

    await node.kubectl(['delete', 'namespace', ns, '--wait=true', '--timeout=180s']);
    const left = await node.kubectl(['get', 'pods', '-A', '-o', 'jsonpath={.items[*].metadata.namespace}']);
    expect(left.split(' ').filter((name) => name === ns)).toEqual([]);
  }, 300_000);

  it('down.sh stops everything and leaves no mounts, interfaces, iptables chains, netns, cgroups, host paths or processes', async () => {
    await node.stop();
    expect(leftovers(node.stateDir, node.env.NODE_IP ?? '10.200.0.1')).toEqual({
      mounts: [],
      links: [],
      chains: [],
      netns: [],
      cgroups: [],
      paths: [],
      processes: [],
    });
    // Idempotent: a second run finds nothing to do.
    await node.stop();
    // The state dir (logs, certificates) is kept for a post-mortem when something failed.
    if (!failed) await rm(node.stateDir, { recursive: true, force: true });
  }, 180_000);
});
