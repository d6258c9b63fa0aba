import {
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureOutput, freePort, terminate, waitUntilReady } from '../procs.js';

/**
 * A real Kubernetes control plane for tests, like controller-runtime's envtest: etcd and
 * kube-apiserver (built by test/tools/build.sh from the pins in test/tools/kube/go.mod) on
 * loopback ports, static-token authentication, RBAC authorization, a service-account signing key
 * (so TokenRequest works), and no kubelet, scheduler or controller-manager: nothing runs pods,
 * garbage-collects owned objects or creates `default` ServiceAccounts.
 */
export interface KubeTestEnv {
  /** https://127.0.0.1:<port> */
  server: string;
  /** A cluster-admin (system:masters) bearer token. */
  adminToken: string;
  /** The API server's self-signed serving CA (PEM). */
  caPem: string;
  /** A kubeconfig for the admin user, written to disk (for helm and other CLIs). */
  kubeconfigPath: string;
  /** A KubeConfig object authenticating with `token` (the admin token by default). */
  kubeConfig(token?: string): KubeConfig;
  /** Stops (SIGTERM, then SIGKILL after 2 s) and starts kube-apiserver on the same port and etcd data. */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

const toolsDir = fileURLToPath(new URL('../../../.cache/tools/', import.meta.url));
export const KUBE_APISERVER_BIN = path.join(toolsDir, 'kube-apiserver');
export const ETCD_BIN = path.join(toolsDir, 'etcd');
export const HELM_BIN = path.join(toolsDir, 'helm');

export function requireTool(bin: string): void {
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(`${path.basename(bin)} not found at ${bin}: run \`bash test/tools/build.sh\``);
  }
}

async function startEtcd(dir: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  for (let attempt = 1; ; attempt++) {
    const clientPort = await freePort();
    const peerPort = await freePort();
    const url = `http://127.0.0.1:${clientPort}`;
    const child = spawn(
      ETCD_BIN,
      [
        '--name=envtest',
        `--data-dir=${path.join(dir, 'etcd')}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=envtest=http://127.0.0.1:${peerPort}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = captureOutput(child);
    try {
      await waitUntilReady('etcd', child, output, async () => {
        const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
        const body = (await res.json()) as { health?: string };
        return body.health === 'true';
      });
      return { child, url, output };
    } catch (err) {
      await terminate(child, 'SIGKILL');
      if (attempt >= 3 || !/address already in use/.test(output())) throw err;
    }
  }
}

/**
 * Starts etcd + kube-apiserver in a fresh temp folder. Takes a few seconds; `stop()` kills both
 * and deletes the folder.
 */
export async function startKubeTestEnv(): Promise<KubeTestEnv> {
  requireTool(KUBE_APISERVER_BIN);
  requireTool(ETCD_BIN);
  const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-envtest-'));
  const certDir = path.join(dir, 'certs');
  const adminToken = randomBytes(24).toString('hex');
  await writeFile(
    path.join(dir, 'tokens.csv'),
    `${adminToken},envtest-admin,envtest-admin,"system:masters"\n`,
    {
      mode: 0o600,
    },
  );
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(path.join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });

  let etcd: Awaited<ReturnType<typeof startEtcd>> | undefined;
  let apiserver: ChildProcess | undefined;
  try {
    etcd = await startEtcd(dir);
    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    const args = [
      `--etcd-servers=${etcd.url}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${certDir}`,
      `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
      `--service-account-key-file=${path.join(dir, 'sa.key')}`,
      `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount',
      '--v=0',
    ];
    let output: () => string = () => '';
    const startApiServer = async (): Promise<ChildProcess> => {
      const child = spawn(KUBE_APISERVER_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      output = captureOutput(child);
      await waitUntilReady(
        'kube-apiserver',
        child,
        output,
        // The serving cert is self-signed and only known once the server has written it.
        async () => (await probeStatus(`${server}/readyz`, adminToken)) === 200,
        60_000,
      );
      return child;
    };
    apiserver = await startApiServer();
    const caPem = await readFile(path.join(certDir, 'apiserver.crt'), 'utf8');

    const kubeConfig = (token = adminToken): KubeConfig => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'envtest', server, caData: Buffer.from(caPem).toString('base64') }],
        users: [{ name: 'user', token }],
        contexts: [{ name: 'envtest', cluster: 'envtest', user: 'user' }],
        currentContext: 'envtest',
      });
      return kc;
    };
    const kubeconfigPath = path.join(dir, 'kubeconfig');
    await writeFile(kubeconfigPath, kubeConfig().exportConfig(), { mode: 0o600 });

    const env: KubeTestEnv = {
      server,
      adminToken,
      caPem,
      kubeconfigPath,
      kubeConfig,
      async restartApiServer() {
        // With watches open kube-apiserver does not exit on SIGTERM by itself; after a short grace
        // it is killed, which is also what a crashed or evicted API server looks like to clients.
        if (apiserver) await terminate(apiserver, 'SIGTERM', 2_000);
        apiserver = await startApiServer();
      },
      async stop() {
        if (apiserver) await terminate(apiserver, 'SIGTERM', 5_000);
        if (etcd) await terminate(etcd.child, 'SIGTERM', 5_000);
        await rm(dir, { recursive: true, force: true });
      },
    };
    return env;
  } catch (err) {
    if (apiserver) await terminate(apiserver, 'SIGKILL');
    if (etcd) await terminate(etcd.child, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** GET `url` over HTTPS without verifying the certificate (only for the readiness probe). */
function probeStatus(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/**
 * A ServiceAccount in `namespace` bound to a Role with `rules`, and a TokenRequest token for it:
 * requests made with the token are authorized by the real RBAC authorizer. Returns the
 * RoleBinding too, so a test can take the permissions away and give them back.
 */
export async function serviceAccountWithRole(
  env: KubeTestEnv,
  namespace: string,
  name: string,
  rules: V1PolicyRule[],
): Promise<{ token: string; roleBinding: V1RoleBinding }> {
  const core = env.kubeConfig().makeApiClient(CoreV1Api);
  const rbac = env.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  const roleBinding: V1RoleBinding = {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  };
  await rbac.createNamespacedRoleBinding({ namespace, body: roleBinding });
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3_600 } },
  });
  if (!status?.token) throw new Error(`TokenRequest for ${name} returned no token`);
  return { token: status.token, roleBinding };
}
