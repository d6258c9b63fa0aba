import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';

const run = promisify(execFile);
const NODE_SCRIPTS = fileURLToPath(new URL('../../kube/node/', import.meta.url));

/** What `test/kube/node/up.sh` writes to `<state dir>/node.env`. */
export interface NodeEnv {
  KUBECONFIG: string;
  /** The node's own address (kubelet, API server). */
  NODE_IP: string;
  /** Where pods reach servers the test runs on the host (PostgreSQL, MinIO, Mailpit). */
  HOST_IP: string;
  STORAGE_CLASS: string;
  [key: string]: string;
}

/** A real single-node cluster (etcd, API server, controller-manager, scheduler, kubelet on containerd). */
export interface TestNode {
  stateDir: string;
  env: NodeEnv;
  kubeConfig: KubeConfig;
  /** Imports an OCI archive into the node's containerd under `ref` (pods use it with pullPolicy Never). */
  importImage(archive: string, ref: string): Promise<void>;
  /** One raw JSON request to the API server as the admin. */
  request(
    method: string,
    urlPath: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; body: unknown }>;
  /** Stops everything and removes what the node made on the machine (mounts, netns, iptables chains). */
  stop(): Promise<void>;
}

const script = (name: string): string => path.join(NODE_SCRIPTS, name);

function parseEnvFile(file: string): NodeEnv {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    const [, key, value] = m ?? [];
    if (key !== undefined && value !== undefined) env[key] = value.replace(/^(['"])(.*)\1$/, '$2');
  }
  for (const key of ['KUBECONFIG', 'NODE_IP', 'HOST_IP']) {
    if (!env[key]) throw new Error(`${file} has no ${key}`);
  }
  return env as NodeEnv;
}

/** Brings a node up with the project's scripts (minutes the first time; logs in `<state dir>/logs/`). */
export async function startNode(): Promise<TestNode> {
  const stateDir = mkdtempSync(path.join(tmpdir(), 'hostplane-node-'));
  const down = () =>
    run('bash', [script('down.sh'), stateDir], { maxBuffer: 16 << 20 }).then(() => undefined);
  try {
    await run('bash', [script('up.sh'), stateDir], { maxBuffer: 16 << 20, timeout: 10 * 60_000 });
  } catch (err) {
    await down().catch(() => {});
    const e = err as { stderr?: string; message: string };
    throw new Error(`test/kube/node/up.sh failed: ${e.message}\n${e.stderr ?? ''}`);
  }
  const env = parseEnvFile(path.join(stateDir, 'node.env'));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(env.KUBECONFIG);

  const request: TestNode['request'] = async (method, urlPath, body, contentType = 'application/json') => {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the node kubeconfig has no current cluster');
    const options: https.RequestOptions = { method, headers: {} };
    await kubeConfig.applyToHTTPSOptions(options);
    const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        new URL(urlPath, cluster.server),
        {
          ...options,
          timeout: 30_000,
          headers: {
            ...options.headers,
            accept: 'application/json',
            ...(text === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = raw;
            try {
              parsed = JSON.parse(raw);
            } catch {
              // not JSON: keep the text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: timeout`)));
      req.on('error', reject);
      req.end(text);
    });
  };

  let stopped: Promise<void> | undefined;
  return {
    stateDir,
    env,
    kubeConfig,
    request,
    async importImage(archive, ref) {
      await run('bash', [script('import-image.sh'), stateDir, archive, ref], { maxBuffer: 16 << 20 });
    },
    stop: () => (stopped ??= down()),
  };
}
