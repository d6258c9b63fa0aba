import http from 'node:http';
import net from 'node:net';
import { expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { apiKeyHeader, startHostplane } from '../../support/hostplane.js';

/** Does a new TCP connection to the port get refused (the listening socket is closed)? */
const refusesConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });

it('lets an upload in flight finish when the server shuts down', async () => {
  const hp = await startHostplane('pglite+fs');
  const site = await hp.createSite('draining');
  const body = JSON.stringify({ path: 'index.html', content: 'finished during shutdown' });
  const half = Math.floor(body.length / 2);

  let req!: http.ClientRequest;
  // `Expect: 100-continue` makes the server say when it has the request: Node answers
  // 100 Continue as it hands the request to the app.
  const received = new Promise<void>((resolve, reject) => {
    req = http.request({
      // A fresh connection closed after the answer, so close() need not wait for an idle keep-alive.
      agent: false,
      host: '127.0.0.1',
      port: hp.port,
      path: '/api/v1/files/upload',
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        expect: '100-continue',
        ...apiKeyHeader(site),
      },
    });
    req.once('continue', () => resolve());
    req.once('error', reject);
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.once('error', reject);
  });
  req.flushHeaders();

  await received;
  req.write(body.slice(0, half));
  const stopping = hp.close();
  // Shutdown has begun once the listening socket is closed; only then does the rest arrive.
  await eventually('the server to refuse new connections', () => refusesConnections(hp.port));
  req.end(body.slice(half));

  const { status, text } = await answered;
  expect(status, text).toBe(200);
  await stopping;
  await hp.stop().catch(() => undefined);
});
