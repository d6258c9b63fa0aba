import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { rawRequest, startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { connect, ok } from './support.js';

// Stateless: two API replicas on one PostgreSQL and bucket behind a round-robin proxy. The SDK's
// client sees one endpoint; each of its requests (initialize, the initialized notification, every
// call) lands on the other replica than the one before, and all of them succeed.

let hp: TestHostplane;
let peerStore: Store | undefined;
let peer: RunningServer | undefined;
let proxy: http.Server | undefined;
let site: TestSite;
const served: number[] = [];

/** A proxy that sends each request to the next replica in turn. */
function roundRobin(ports: number[]): Promise<http.Server> {
  let next = 0;
  const server = http.createServer((req, res) => {
    const port = ports[next++ % ports.length]!;
    served.push(port);
    const forward = http.request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  hp = await startHostplane('postgres+s3');
  site = await hp.createSite('mcpreplicas');
  peerStore = await openStore({ databaseUrl: hp.config.databaseUrl });
  peer = await startServer(hp.config, {
    store: peerStore,
    blobs: hp.services.blobs,
    logger: createLogger('silent'),
    adminSocket: false,
    worker: false,
  });
  proxy = await roundRobin([hp.port, peer.port]);
});
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await peer?.close();
  await peerStore?.close();
  await hp?.stop();
});

it('serves one client from two replicas in turn (postgres+s3)', async () => {
  const url = `http://127.0.0.1:${(proxy!.address() as AddressInfo).port}`;
  const client = await connect(url, { key: site.apiKey });
  for (let i = 1; i <= 3; i++) {
    const deployed = await ok(client, 'deploy_files', {
      mode: 'replace',
      files: [{ path: 'index.html', content: `v${i}` }],
    });
    expect(deployed.deploy.live).toBe(true);
    const read = await ok(client, 'read_file', { path: 'index.html' });
    expect(read.content).toBe(`v${i}`);
    // Both replicas' edges serve what the call made live, whichever replica made it.
    for (const port of [hp.port, peer!.port]) {
      const res = await rawRequest(port, '/', {
        method: 'GET',
        headers: { host: 'mcpreplicas.localhost:8080' },
      });
      expect(await res.text()).toBe(`v${i}`);
    }
  }
  const history = await ok(client, 'list_deploys');
  expect(history.deploys).toHaveLength(3);
  await client.close();
  expect(new Set(served)).toEqual(new Set([hp.port, peer!.port]));
  expect(served.length).toBeGreaterThanOrEqual(8);
});
