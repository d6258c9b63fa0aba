import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * The real single-node Kubernetes of test/kube/node/ (etcd, kube-apiserver, controller-manager,
 * scheduler, containerd + runc, kubelet, CNI bridge, kube-proxy, CoreDNS), driven from tests:
 * `startNode()` runs up.sh in a fresh state dir, `stop()` runs down.sh.
 */
export interface TestNode {
  stateDir: string;
  /** node.env as written by up.sh (KUBECONFIG, NODE_IP, HOST_IP, CONTAINERD_ADDRESS, ...). */
  env: Record<string, string>;
  /** Seconds up.sh took. */
  upSeconds: number;
  /** kubectl with the node's admin kubeconfig; rejects with its stderr on a non-zero exit. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** The admin kubeconfig, loaded. */
  kubeConfig: KubeConfig;
  /** One raw JSON request to the API server as the admin (body sent as JSON unless a string). */
  request(
    method: string,
    urlPath: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; body: unknown }>;
  /** import-image.sh: an OCI archive into the node's containerd under `ref`. */
  importImage(archive: string, ref: string): Promise<void>;
  /** down.sh (idempotent). */
  stop(): Promise<void>;
}

export const NODE_SCRIPTS_DIR = fileURLToPath(new URL('../../kube/node/', import.meta.url));

/** Runs a script to its end; rejects with the tail of its output when it fails. */
export function runScript(script: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(NODE_SCRIPTS_DIR, script), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let output = '';
    const add = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-32_768);
    };
    child.stdout.on('data', add);
    child.stderr.on('data', add);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${script} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${output}`));
    });
  });
}

export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const [, key, value] = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line) ?? [];
    if (key !== undefined && value !== undefined) env[key] = value;
  }
  return env;
}

/**
 * up.sh in a fresh state dir (or `stateDir`). With HOSTPLANE_TEST_NODE=<state dir> it uses the node
 * already brought up there instead and leaves it running (to iterate on a test against one node).
 */
export async function startNode(stateDir?: string): Promise<TestNode> {
  const reused = process.env.HOSTPLANE_TEST_NODE;
  const dir = reused ?? stateDir ?? (await mkdtemp(path.join(tmpdir(), 'hostplane-node-')));
  const t0 = Date.now();
  if (!reused) {
    try {
      await runScript('up.sh', [dir], 300_000);
    } catch (err) {
      await runScript('down.sh', [dir], 120_000).catch(() => undefined);
      throw err;
    }
  }
  const upSeconds = (Date.now() - t0) / 1000;
  const env = parseEnvFile(await readFile(path.join(dir, 'node.env'), 'utf8'));
  const kubectlBin = env.KUBECTL;
  const kubeconfig = env.KUBECONFIG;
  if (!kubectlBin || !kubeconfig) throw new Error(`node.env of ${dir} names no KUBECTL or KUBECONFIG`);
  const kubectl = (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        kubectlBin,
        ['--kubeconfig', kubeconfig, '--cache-dir', path.join(dir, 'kubectl-cache'), ...args],
        { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, timeout: 180_000 },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
          else resolve(stdout);
        },
      );
      child.stdin?.end(input ?? '');
    });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  return {
    stateDir: dir,
    env,
    upSeconds,
    kubectl,
    kubeConfig,
    request: (method, urlPath, body, contentType) =>
      apiRequest(kubeConfig, method, urlPath, body, contentType),
    async importImage(archive, ref) {
      await runScript('import-image.sh', [dir, archive, ref], 300_000);
    },
    async stop() {
      if (!reused) await runScript('down.sh', [dir], 120_000);
    },
  };
}

/** One request to the API server with the kubeconfig's credentials, JSON in and out. */
async function apiRequest(
  kubeConfig: KubeConfig,
  method: string,
  urlPath: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: unknown }> {
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
}
