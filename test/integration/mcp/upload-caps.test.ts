import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { connect, ok } from './support.js';

// deploy_files under a small upload byte budget (8 MiB, 2 MiB a site): its uploads are the API's,
// held to the same budget; it sends several at once, and waits out what the budget refuses.
let hp: TestHostplane;
let site: TestSite;

beforeAll(async () => {
  hp = await startHostplane('pglite+fs', {
    env: { HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '8', HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '2' },
  });
  site = await hp.createSite('mcpcaps');
});
afterAll(() => hp?.stop());

it('deploy_files sends 12 new files in one bulk request, none refused', async () => {
  const refusedBefore = await metric(/^hostplane_upload_refusals_total\{cap="site"\}/);
  const bulkBefore = await metric(/^hostplane_deploy_bulk_uploads_total\{outcome="ok"\}/);
  const partsBefore = await metric(/^hostplane_deploy_bulk_parts_total\{result="received"\}/);
  const client = await connect(hp.url, { key: site.apiKey });
  const files = Array.from({ length: 12 }, (_, i) => ({ path: `p${i}.html`, content: `<p>page ${i}</p>` }));
  const done = await ok(client, 'deploy_files', { mode: 'replace', files });
  expect(done.uploaded).toBe(12);
  expect(done.deploy.live).toBe(true);
  expect(await (await hp.request('/p11.html', { host: 'mcpcaps.localhost' })).text()).toBe('<p>page 11</p>');
  expect(await metric(/^hostplane_upload_refusals_total\{cap="site"\}/)).toBe(refusedBefore);
  expect(await metric(/^hostplane_deploy_bulk_uploads_total\{outcome="ok"\}/)).toBe(bulkBefore + 1);
  expect(await metric(/^hostplane_deploy_bulk_parts_total\{result="received"\}/)).toBe(partsBefore + 12);
  await client.close();
});

/** A metric's value on /metrics (0 when absent). */
async function metric(line: RegExp): Promise<number> {
  const text = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
  const match = text.split('\n').find((l) => line.test(l));
  return match ? Number(match.split(' ').pop()) : 0;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not reached');
}

it("waits out the site's share held by another client's upload, then deploys", async () => {
  // Another client of the site: an upload whose body has only begun, holding the site's whole
  // share (600 KB of JSON costs five times that, more than the 2 MiB share: it reserves the share).
  const body = JSON.stringify({ path: 'other.txt', content: 'from another client'.padEnd(600_000, '.') });
  const held = request(`${hp.url}/api/v1/files/upload`, {
    method: 'POST',
    headers: {
      'x-api-key': site.apiKey,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    },
  });
  const answered = new Promise<number>((resolve) =>
    held.on('response', (res) => resolve(res.statusCode ?? 0)),
  );
  held.write(body.slice(0, 10));
  await until(async () => (await metric(/^hostplane_uploads_in_flight /)) === 1);
  const refusals = /^hostplane_upload_refusals_total\{cap="site"\}/;
  const refusedBefore = await metric(refusals);

  const client = await connect(hp.url, { key: site.apiKey });
  const deploying = ok(client, 'deploy_files', {
    mode: 'replace',
    files: [
      { path: 'a.html', content: 'a, waited for' },
      { path: 'b.html', content: 'b, waited for' },
    ],
  });
  await until(async () => (await metric(refusals)) > refusedBefore);
  held.end(body.slice(10));
  expect(await answered).toBe(200);
  const done = await deploying;
  expect(done.uploaded).toBe(2);
  expect(await (await hp.request('/b.html', { host: 'mcpcaps.localhost' })).text()).toBe('b, waited for');
  await client.close();
});
