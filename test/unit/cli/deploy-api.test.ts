import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeployApi, MAX_ATTEMPTS } from '../../../src/cli/deploy/api.js';
import { ApiUnavailable } from '../../../src/cli/errors.js';

// The deploy commands' HTTP client (node:http, src/cli/deploy/http.ts) against a loopback server.

const servers: http.Server[] = [];
const silentOnes: { server: net.Server; sockets: net.Socket[] }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  for (const { server, sockets } of silentOnes.splice(0)) {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A TCP server that accepts every connection, reads what comes and never answers. */
async function silent(): Promise<{ base: string; connections: () => number }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.resume();
  });
  silentOnes.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => sockets.length,
  };
}

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

  describe('a server that accepts and never answers', () => {
    it('a GET fails with the timeout, naming the request, after its retries (one connection each)', async () => {
      const { base, connections } = await silent();
      vi.spyOn(Math, 'random').mockReturnValue(0); // no backoff between the attempts
      const api = new DeployApi({ baseUrl: base, apiKey: 'k', idleTimeoutMs: 50 });
      const retries: string[] = [];
      api.onRetry = (what, _attempt, _wait, reason) => retries.push(`${what}: ${reason}`);
      const err = await api.get('/api/v1/hosting-info').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiUnavailable);
      expect((err as Error).message).toBe(
        `GET /api/v1/hosting-info: ETIMEDOUT: nothing sent or received for 0.05 s (${MAX_ATTEMPTS} attempts, ${base} unreachable)`,
      );
      expect(retries).toHaveLength(MAX_ATTEMPTS - 1);
      expect(connections()).toBe(MAX_ATTEMPTS);
    });

    it('the POST that creates a deploy is not sent again after a timeout (the server may have created it)', async () => {
      const { base, connections } = await silent();
      const api = new DeployApi({ baseUrl: base, apiKey: 'k', idleTimeoutMs: 50 });
      const err = await api
        .post('/api/v1/deploys', { files: {} }, { repeatable: false })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiUnavailable);
      expect((err as Error).message).toMatch(
        /^POST \/api\/v1\/deploys: ETIMEDOUT: nothing sent or received for 0\.05 s \(not sent again/,
      );
      expect(connections()).toBe(1);
    });

    it('a streamed upload longer than the timeout in all, but never silent that long, goes through', async () => {
      const base = await serve((req, res) => {
        let bytes = 0;
        req.on('data', (c: Buffer) => (bytes += c.length));
        req.on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ bytes }));
        });
      });
      const api = new DeployApi({ baseUrl: base, apiKey: 'k', idleTimeoutMs: 200 });
      // Ten pieces, one every 50 ms: half a second in all, never 200 ms without a byte.
      const stream = () =>
        Readable.from(
          (async function* () {
            for (let i = 0; i < 10; i++) {
              await new Promise((resolve) => setTimeout(resolve, 50));
              yield Buffer.alloc(1000, 1);
            }
          })(),
        );
      const started = Date.now();
      const answer = await api.put('/upload', { stream, length: 10_000 });
      expect(answer.body).toEqual({ bytes: 10_000 });
      expect(Date.now() - started).toBeGreaterThan(200);
    });
  });
});
