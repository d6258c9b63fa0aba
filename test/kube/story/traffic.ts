/**
 * The traffic every dashboard panel needs to show data on the node: page views on the edge (hits
 * after the first miss, and a 404), an upload and a whole-site deploy through the API, form
 * submissions (one accepted, one spam). SQLite calls, restores and reconciles come from the steps
 * before; Litestream syncs from the shards.
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { rawRequest } from '../../support/hostplane.js';
import { API_HOST, RELEASE, type Story } from './context.js';

export async function driveDashboardTraffic(story: Story): Promise<void> {
  for (let i = 0; i < 5; i++) expect((await story.site('story')).status).toBe(200);
  expect((await story.site('story', '/missing.html')).status).toBe(404);

  const upload = await story.api('/api/v1/files/upload', {
    json: { path: 'notes/upload.txt', content: 'uploaded on the node' },
  });
  expect(upload.res.status, JSON.stringify(upload.body)).toBe(200);

  // A deploy keeps the page the later steps check, and adds a file.
  const files = { 'index.html': '<h1>from a real node</h1>', 'deploy.txt': `deployed at ${Date.now()}` };
  const sha = (text: string) => createHash('sha256').update(text).digest('hex');
  const created = await story.api('/api/v1/deploys', {
    json: { files: Object.fromEntries(Object.entries(files).map(([p, c]) => [p, sha(c)])) },
  });
  expect(created.res.status, JSON.stringify(created.body)).toBeLessThan(300);
  const id = created.body.id as string;
  const address = await story.clusterIp(`${RELEASE}-api`);
  for (const hash of (created.body.required as string[] | undefined) ?? []) {
    const content = Object.values(files).find((c) => sha(c) === hash)!;
    const res = await rawRequest(80, `/api/v1/deploys/${id}/files/${hash}`, {
      method: 'PUT',
      address,
      headers: { host: API_HOST, 'x-api-key': story.apiKey, 'content-type': 'application/octet-stream' },
      body: content,
    });
    expect(res.status, await res.text()).toBeLessThan(300);
  }
  const finalized = await story.api(`/api/v1/deploys/${id}/finalize`, { method: 'POST', json: {} });
  expect(finalized.res.status, JSON.stringify(finalized.body)).toBeLessThan(300);

  // One accepted submission and one spam (the honeypot filled).
  for (const trap of ['', 'i am a bot']) {
    const posted = await story.api(`/f/${story.formUuid}`, {
      json: { email: 'visitor@example.com', _t_start: Math.floor(Date.now() / 1000) - 10, _t_trap: trap },
      headers: { 'x-api-key': '' },
    });
    expect(posted.res.status, JSON.stringify(posted.body)).toBeLessThan(400);
  }
}
