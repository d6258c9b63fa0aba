import http from 'node:http';
import { isIPv6, type AddressInfo } from 'node:net';
import { registry } from './metrics.js';

export interface MetricsServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * `/metrics` on its own port, never on the public one: Prometheus scrapes the pod there, and no
 * Ingress or customer domain can reach it. `host` is the address it listens on: loopback by
 * default (HOSTPLANE_METRICS_HOST), since it asks for no credential.
 */
export async function startMetricsServer(port: number, host: string): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: scrape GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    port: actual,
    url: `http://${reachableHost(host)}:${actual}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** How this process reaches a server listening on `host`: a wildcard address is reached on loopback. */
function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return isIPv6(host) ? `[${host}]` : host;
}
