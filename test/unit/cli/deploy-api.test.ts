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

/**
 * A TCP server that reads each request whole (its headers and `content-length` bytes of body)
 * and then resets the connection instead of answering: the request reached it, the answer is lost.
 */
async function resetting(): Promise<{ base: string; requests: () => number }> {
  const sockets: net.Socket[] = [];
  let requests = 0;
  const server = net.createServer((socket) => {
    sockets.push(socket);
    let got = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(got.subarray(0, end).toString())?.[1] ?? 0);
      if (got.length < end + 4 + length) return;
      requests++;
      socket.resetAndDestroy();
    });
  });
  silentOnes.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
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

  it('the create of a deploy with its Idempotency-Key is sent again after a 502, a 504 and a reset, with the same key', async () => {
    const keys: Array<string | undefined> = [];
    const base = await serve((req, res) => {
      keys.push(req.headers['idempotency-key'] as string | undefined);
      req.resume();
      req.on('end', () => {
        const attempt = keys.length;
        if (attempt === 3) return req.socket.resetAndDestroy();
        res.writeHead(attempt === 1 ? 502 : attempt === 2 ? 504 : 200, {
          'content-type': 'application/json',
        });
        res.end(
          attempt <= 2 ? '{"error":"Bad Gateway","message":"from the test proxy"}' : '{"id":"k7q2m4x9a3bc"}',
        );
      });
    });
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
    const answer = await api.post(
      '/api/v1/deploys',
      { files: {} },
      { headers: { 'idempotency-key': 'run-1' } },
    );
    expect(answer).toEqual({ body: { id: 'k7q2m4x9a3bc' }, attempts: 4 });
    expect(keys).toEqual(['run-1', 'run-1', 'run-1', 'run-1']);
  });

  describe('a request the server may have acted on (a switch is not repeatable)', () => {
    it('a switch whose connection is reset after the request reached the server is not sent again', async () => {
      const { base, requests } = await resetting();
      vi.spyOn(Math, 'random').mockReturnValue(0);
      const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
      const err = await api
        .post('/api/v1/deploys/x/finalize', undefined, { repeatable: false })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiUnavailable);
      expect((err as Error).message).toMatch(
        /^POST \/api\/v1\/deploys\/x\/finalize: ECONNRESET \(not sent again/,
      );
      expect(requests()).toBe(1);
    });

    it('a repeatable request reset the same way is tried again', async () => {
      const { base, requests } = await resetting();
      vi.spyOn(Math, 'random').mockReturnValue(0);
      const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
      await expect(api.post('/api/v1/deploys/x/finalize')).rejects.toThrow(/ECONNRESET \(5 attempts/);
      expect(requests()).toBe(MAX_ATTEMPTS);
    });

    it('a switch refused before any connection (nothing listening) is tried again', async () => {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      vi.spyOn(Math, 'random').mockReturnValue(0);
      const api = new DeployApi({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' });
      const retries: number[] = [];
      api.onRetry = (_what, attempt) => retries.push(attempt);
      await expect(api.post('/api/v1/deploys/x/publish', undefined, { repeatable: false })).rejects.toThrow(
        /ECONNREFUSED \(5 attempts/,
      );
      expect(retries).toEqual([1, 2, 3, 4]);
    });

    it('a switch answered 502 or 504 (a proxy: the server behind it may have acted) is not sent again; 503 is', async () => {
      const seen: string[] = [];
      const base = await serve((req, res) => {
        seen.push(req.url!);
        req.resume();
        const status = Number(req.url!.slice(1));
        res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(JSON.stringify({ error: String(status), message: 'from the test proxy' }));
      });
      const api = new DeployApi({ baseUrl: base, apiKey: 'k' });
      for (const status of [502, 504]) {
        const err = await api
          .post(`/${status}`, { files: {} }, { repeatable: false })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ApiUnavailable);
        expect((err as Error).message).toMatch(
          new RegExp(`^POST /${status}: ${status} from the test proxy \\(not sent again`),
        );
      }
      await expect(api.post('/503', { files: {} }, { repeatable: false })).rejects.toThrow(
        /after 5 attempts/,
      );
      expect(seen).toEqual(['/502', '/504', ...Array<string>(MAX_ATTEMPTS).fill('/503')]);
    });
  });

  it('a single large write longer than the idle timeout is not cut while the server keeps reading it', async () => {
    // One buffer, one write (a bucket of the bulk upload), read by the server about 64 KB every
    // 5 ms: handing it all to the kernel takes seconds, several times the 1 s idle timeout. Node's
    // socket timer is held off while the write's queue shrinks; the last few MB the kernel holds
    // after the write are read well within the timeout.
    let reads = 0;
    const base = await serve((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        reads++;
        req.pause();
        setTimeout(() => req.resume(), 5);
      });
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ bytes }));
      });
    });
    const api = new DeployApi({ baseUrl: base, apiKey: 'k', idleTimeoutMs: 1000 });
    const retries: string[] = [];
    api.onRetry = (_what, _attempt, _wait, reason) => retries.push(reason);
    const size = 32 * 1024 * 1024;
    const started = Date.now();
    const answer = await api
      .postBulk('/api/v1/deploys/x/files', {
        multipart: new Uint8Array(size),
        contentType: 'multipart/form-data',
      })
      .catch((e: unknown) => e);
    expect(retries).toEqual([]);
    expect(answer).toEqual({ body: { bytes: size }, attempts: 1 });
    expect(Date.now() - started).toBeGreaterThan(2000);
    expect(reads).toBeGreaterThan(100);
  }, 30_000);

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

    it('a switch is not sent again after a timeout (the server may have acted on it)', async () => {
      const { base, connections } = await silent();
      const api = new DeployApi({ baseUrl: base, apiKey: 'k', idleTimeoutMs: 50 });
      const err = await api
        .post('/api/v1/deploys/x/restore', undefined, { repeatable: false })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiUnavailable);
      expect((err as Error).message).toMatch(
        /^POST \/api\/v1\/deploys\/x\/restore: ETIMEDOUT: nothing sent or received for 0\.05 s \(not sent again/,
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
