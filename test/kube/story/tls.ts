/**
 * The story's sites through the node's ingress controller (Traefik, on the node's address) over
 * TLS: the operator's wildcard certificate for the slug hosts (made here from the story's own CA),
 * and a custom domain attached and verified through the account API, whose certificate cert-manager
 * gets from Pebble (the node's ACME server) by HTTP-01 through the ingress. Requests go to the node's
 * address by host name (SNI and Host), trusting only the CA that should have signed the answer.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PeerCertificate } from 'node:tls';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { MINUTES, NS, RELEASE, SITES_DOMAIN, type Obj, type Story } from './context.js';

const run = promisify(execFile);

/** The operator-provided Secret for *.<sites domain> (chart value sites.tls.wildcardSecret). */
export const WILDCARD_SECRET = 'sites-wildcard-tls';

export interface Answer {
  status: number;
  location: string | undefined;
  body: string;
  /** HTTPS: the certificate the server presented. */
  peer?: PeerCertificate;
}

/** GET http://<host><path> on the node's address (port 80); redirects are not followed. */
export function httpGet(story: Story, host: string, pathAndQuery = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: story.nodeEnv('NODE_IP'), port: 80, path: pathAndQuery, headers: { host }, timeout: 10_000 },
      (res) => collect(res, resolve, reject),
    );
    req.on('timeout', () => req.destroy(new Error(`http://${host}${pathAndQuery}: timed out`)));
    req.on('error', reject);
  });
}

/**
 * GET https://<host><path> on the node's address (port 443, SNI <host>), trusting `ca` only (null:
 * any certificate, for a check of what answers rather than who).
 */
export function httpsGet(story: Story, host: string, ca: string | null, pathAndQuery = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: story.nodeEnv('NODE_IP'),
        port: 443,
        servername: host,
        path: pathAndQuery,
        headers: { host },
        ...(ca === null ? { rejectUnauthorized: false } : { ca }),
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        const peer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate();
        collect(res, (answer) => resolve({ ...answer, peer }), reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`https://${host}${pathAndQuery}: timed out`)));
    req.on('error', reject);
  });
}

function collect(
  res: http.IncomingMessage,
  resolve: (answer: Answer) => void,
  reject: (err: Error) => void,
): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('error', reject);
  res.on('end', () =>
    resolve({
      status: res.statusCode ?? 0,
      location: res.headers.location,
      body: Buffer.concat(chunks).toString('utf8'),
    }),
  );
}

/**
 * A CA of the story's own and a certificate for *.<sites domain> it signed, as the operator's
 * kubernetes.io/tls Secret in the release namespace. Returns the CA (PEM) a client trusts.
 */
export async function createWildcardSecret(story: Story): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-wildcard-'));
  try {
    const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    await openssl(
      'req',
      '-x509',
      ...ec,
      '-days',
      '2',
      '-subj',
      '/CN=hostplane-story-operator-ca',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    await openssl(
      'req',
      '-new',
      ...ec,
      '-subj',
      `/CN=*.${SITES_DOMAIN}`,
      '-keyout',
      'tls.key',
      '-out',
      'tls.csr',
    );
    await run(
      'sh',
      [
        '-c',
        `printf 'subjectAltName=DNS:*.${SITES_DOMAIN}\\nextendedKeyUsage=serverAuth\\nbasicConstraints=CA:FALSE\\n' > ext && ` +
          'openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out tls.crt',
      ],
      { cwd: dir },
    );
    const [ca, crt, key] = await Promise.all(
      ['ca.crt', 'tls.crt', 'tls.key'].map((f) => readFile(path.join(dir, f), 'utf8')),
    );
    const res = await story.kube('POST', `/api/v1/namespaces/${NS}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: WILDCARD_SECRET, namespace: NS },
      stringData: { 'tls.crt': crt, 'tls.key': key },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return ca!;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Pebble's root (its management endpoint; the node's CA signed that endpoint's certificate). */
export async function pebbleRoot(story: Story): Promise<string> {
  const nodeCa = await readFile(story.nodeEnv('NODE_CA'), 'utf8');
  const url = new URL('/roots/0', story.nodeEnv('PEBBLE_MANAGEMENT'));
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca: nodeCa, agent: false }, (res) =>
        collect(
          res,
          (a) => (a.status === 200 ? resolve(a.body) : reject(new Error(`${url}: ${a.status}`))),
          reject,
        ),
      )
      .on('error', reject);
  });
}

/** A TXT record in pebble-challtestsrv, the DNS the node's CoreDNS asks for the ACME zone. */
export async function setTxt(story: Story, name: string, value: string): Promise<void> {
  const res = await fetch(new URL('/set-txt', story.nodeEnv('CHALLTESTSRV_MANAGEMENT')), {
    method: 'POST',
    body: JSON.stringify({ host: `${name.replace(/\.$/, '')}.`, value }),
  });
  expect(res.status).toBe(200);
}

/** An account session of the site's owner, minted by the admin CLI in an api pod. */
export async function ownerSession(story: Story, email: string): Promise<string> {
  const out = await story.node.kubectl([
    'exec',
    '-n',
    NS,
    `deploy/${RELEASE}-api`,
    '--',
    'node',
    '/app/dist/src/cli/main.js',
    'admin',
    'session',
    '--email',
    email,
    '--json',
  ]);
  const parsed = JSON.parse(out) as { token?: string; session?: string };
  const token = parsed.token ?? parsed.session;
  if (!token) throw new Error(`admin session printed no token: ${out}`);
  return token;
}

type Certificate = Obj & {
  spec: { dnsNames?: string[]; secretName: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
};

/** cert-manager Certificates of the release namespace naming `hostname`. */
export async function certificatesFor(story: Story, hostname: string): Promise<Certificate[]> {
  const all = await story.list<Certificate>(`/apis/cert-manager.io/v1/namespaces/${NS}/certificates`);
  return all.filter((c) => c.spec.dnsNames?.includes(hostname));
}

/** The Certificate for `hostname`, once Ready (its last condition quoted when it never is). */
export async function certificateReady(story: Story, hostname: string): Promise<Certificate> {
  return eventually(
    `a Ready Certificate for ${hostname}`,
    async () => {
      const [cert] = await certificatesFor(story, hostname);
      const ready = cert?.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'True') return cert;
      throw new Error(`Certificate ${cert?.metadata.name ?? '(none)'}: ${JSON.stringify(ready ?? null)}`);
    },
    4 * MINUTES,
  );
}
