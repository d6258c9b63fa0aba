import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DeployApi } from '../../../src/cli/deploy/api.js';
import { ApiUnavailable } from '../../../src/cli/errors.js';

// The deploy commands' HTTP client (node:http, src/cli/deploy/http.ts) against a loopback server.

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('DeployApi', () => {
  it('refuses a redirect, naming where it points, instead of following it (a POST would turn into a GET)', async () => {
    const seen: string[] = [];
    const target = await serve((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      res.end('{"id":"x"}');
    });
    const base = await serve((req, res) => {
      res.writeHead(301, { location: `${target}${req.url}` });
      res.end();
    });
    const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
    const err = await api.post('/api/v1/deploys', { files: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiUnavailable);
    expect((err as Error).message).toContain(`a redirect to ${target}/api/v1/deploys`);
    expect(seen).toEqual([]);
  });

  it('sends JSON with its length and reads the answer; a 4xx body is the refusal', async () => {
    const base = await serve((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.url === '/missing') {
          res.writeHead(404);
          return res.end('{"error":"NOT_FOUND","message":"No such deploy"}');
        }
        res.end(
          JSON.stringify({
            length: req.headers['content-length'],
            got: JSON.parse(Buffer.concat(chunks).toString()),
          }),
        );
      });
    });
    const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
    expect((await api.post('/echo', { a: 'é' })).body).toEqual({ length: '10', got: { a: 'é' } });
    await expect(api.get('/missing')).rejects.toMatchObject({ status: 404 });
  });
});
