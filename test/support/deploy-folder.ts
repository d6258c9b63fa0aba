import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { rawRequest } from './hostplane.js';

/** A new temp folder holding `files` (relative path → content); returns its path. */
export async function siteFolder(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-deploy-'));
  await writeFiles(dir, files);
  return dir;
}

export async function writeFiles(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    await mkdir(path.dirname(abs), { recursive: true });
    await writeFile(abs, content);
  }
}

/** GET `pathAndQuery` on a host of the server on `port` (a site's, or a preview's): status and body. */
export async function getOnHost(port: number, host: string, pathAndQuery = '/') {
  const res = await rawRequest(port, pathAndQuery, { headers: { host: `${host}:${port}` } });
  return { status: res.status, text: await res.text() };
}

/** Sends `req` on to the API on `port` on loopback; `onAnswer` gets the server's answer. */
function upstream(
  port: number,
  req: http.IncomingMessage,
  onAnswer: (answer: http.IncomingMessage) => void,
  onError: () => void,
): void {
  const request = http.request(
    {
      host: '127.0.0.1',
      port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: `localhost:${port}` },
    },
    onAnswer,
  );
  request.on('error', onError);
  req.pipe(request);
}

/** Forwards a request to the API on `port` on loopback and pipes its answer back. */
export function forward(port: number, req: http.IncomingMessage, res: http.ServerResponse): void {
  upstream(
    port,
    req,
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
    () => res.destroy(),
  );
}

/** A proxy server listening on loopback: its URL and a close that drops its connections. */
async function listening(server: http.Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A loopback proxy in front of the API on `port` that answers the first `failures` requests
 * matching `fails` with a 503 (Retry-After: 0) and forwards everything else. `failed` counts them.
 */
export async function flakyProxy(
  port: number,
  fails: (req: http.IncomingMessage) => boolean,
  failures = 1,
): Promise<{ url: string; failed: () => number; close(): Promise<void> }> {
  let failed = 0;
  const server = http.createServer((req, res) => {
    if (failed < failures && fails(req)) {
      failed++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(
        JSON.stringify({ error: 'Service Unavailable', message: 'the proxy failed this one on purpose' }),
      );
      return;
    }
    forward(port, req, res);
  });
  return { ...(await listening(server)), failed: () => failed };
}

/**
 * A proxy in front of the API on `port` that forwards everything. The first request matching
 * `lose` it forwards too, reads the server's answer, runs `meanwhile` (another client's turn), and
 * then resets the client's connection instead of passing the answer on: the server acted, the
 * client never hears of it. Later matching requests go through. `statuses`: the server's answers
 * to every matching request, the lost one first.
 */
export async function lostAnswerProxy(
  port: number,
  lose: (req: http.IncomingMessage) => boolean,
  meanwhile: () => Promise<void> = async () => undefined,
): Promise<{ url: string; statuses: () => number[]; close(): Promise<void> }> {
  const statuses: number[] = [];
  const server = http.createServer((req, res) => {
    if (!lose(req)) return forward(port, req, res);
    const first = statuses.length === 0;
    upstream(
      port,
      req,
      (answer) => {
        statuses.push(answer.statusCode ?? 0);
        if (!first) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        answer.resume();
        answer.on('end', () => void meanwhile().finally(() => req.socket.resetAndDestroy()));
      },
      () => req.socket.resetAndDestroy(),
    );
  });
  return { ...(await listening(server)), statuses: () => statuses };
}
