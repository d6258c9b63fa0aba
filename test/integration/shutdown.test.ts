import http from 'node:http';
import { expect, it } from 'vitest';
import { apiKeyHeader, startHostplane } from '../support/hostplane.js';

it('lets an upload in flight finish when the server shuts down', async () => {
  const hp = await startHostplane('pglite+fs');
  const site = await hp.createSite('draining');
  const body = JSON.stringify({ path: 'index.html', content: 'finished during shutdown' });
  const half = Math.floor(body.length / 2);

  const status = new Promise<number>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: hp.port,
        path: '/api/v1/files/upload',
        method: 'POST',
        headers: {
          host: 'localhost:8080',
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          ...apiKeyHeader(site),
        },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.write(body.slice(0, half));
    // The rest arrives after shutdown has begun.
    setTimeout(() => req.end(body.slice(half)), 300);
  });
  await new Promise((r) => setTimeout(r, 100));
  const stopping = hp.close();
  expect(await status).toBe(200);
  await stopping;
  await hp.stop().catch(() => undefined);
});
