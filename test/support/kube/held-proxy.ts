import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeTestEnv } from './envtest.js';

/** A request to the API server as the proxy saw it. */
export interface ProxiedRequest {
  method: string;
  path: string;
  body: string;
}

/**
 * A plain-HTTP proxy in front of the test API server whose next request matching a predicate can
 * be held back until the test releases it, as if that one call were slow: the test then runs
 * other steps (another replica's call, a controller pass) in between, without sleeping.
 */
export interface HeldKubeProxy {
  /** A kubeconfig file that reaches the API server through the proxy, as `token`. */
  kubeconfigPath: string;
  /** Holds the next request for which `matches` is true. */
  holdNext(matches: (request: ProxiedRequest) => boolean): void;
  /** Resolves with the held request once it has arrived. */
  held(): Promise<ProxiedRequest>;
  /** Sends the held request on. */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldKubeProxy(
  env: KubeTestEnv,
  token: string,
  dir: string,
): Promise<HeldKubeProxy> {
  const target = new URL(env.server);
  let matcher: ((request: ProxiedRequest) => boolean) | undefined;
  let arrived: ((request: ProxiedRequest) => void) | undefined;
  let arrivedRequest: Promise<ProxiedRequest> | undefined;
  let releaseHeld: (() => void) | undefined;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const seen = { method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString('utf8') };
      const forward = () => {
        const upstream = https.request(
          {
            host: target.hostname,
            port: target.port,
            method: seen.method,
            path: seen.path,
            headers: { ...req.headers, host: target.host },
            ca: env.caPem,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', (err) => res.destroy(err));
        upstream.end(body);
      };
      if (matcher?.(seen)) {
        matcher = undefined;
        releaseHeld = forward;
        arrived?.(seen);
        return;
      }
      forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const kc = new KubeConfig();
  kc.loadFromOptions({
    // Plain HTTP on loopback: the client allows it only with skipTLSVerify set.
    clusters: [{ name: 'proxy', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'user', token }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'user' }],
    currentContext: 'proxy',
  });
  const kubeconfigPath = path.join(dir, 'proxy-kubeconfig');
  await writeFile(kubeconfigPath, kc.exportConfig(), { mode: 0o600 });

  return {
    kubeconfigPath,
    holdNext(matches) {
      matcher = matches;
      arrivedRequest = new Promise((resolve) => (arrived = resolve));
    },
    held() {
      if (!arrivedRequest) throw new Error('holdNext was not called');
      return arrivedRequest;
    },
    release() {
      const forward = releaseHeld;
      releaseHeld = undefined;
      arrivedRequest = undefined;
      forward?.();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
