import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployClient, type DeployClient } from '../../support/deploys-api.js';
import {
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// Restore (the rollback): back to an earlier deploy, the files API's changes recorded first; and
// the live deploy restored again, a no-op while its files are live.
describe.each(backends)('deploy restore (%s)', (backend) => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(async () => {
    await hp?.stop();
  });

  async function siteWithClient(slug: string): Promise<[TestSite, DeployClient]> {
    const site = await hp.createSite(slug);
    return [site, deployClient(hp.port, site.apiKey)];
  }
  const page = async (host: string, path: string) => {
    const res = await hp.request(path, { host });
    return { status: res.status, text: await res.text() };
  };

  it('restores an earlier deploy, recording what the files API changed as a deploy first', async () => {
    const [site, api] = await siteWithClient('dep-restore');
    const host = 'dep-restore.localhost:8080';
    const first = await api.deploy({ 'index.html': 'v1', 'a/one.html': 'one' });
    const second = await api.deploy({ 'index.html': 'v2' });
    expect((await page(host, '/')).text).toBe('v2');
    await upload(hp, site, 'extra.html', 'through the files API');

    let list = await api.call('GET', '/api/v1/deploys');
    expect(list.body).toMatchObject({ live_deploy_id: second, live_changed_since_deploy: true });

    const restored = await api.call('POST', `/api/v1/deploys/${first}/restore`);
    expect(restored.status).toBe(200);
    expect((await page(host, '/')).text).toBe('v1');
    expect((await page(host, '/a/one.html')).text).toBe('one');
    expect((await page(host, '/extra.html')).status).toBe(404);

    list = await api.call('GET', '/api/v1/deploys');
    const deploys = list.body.deploys as Array<Record<string, unknown>>;
    expect(list.body).toMatchObject({ live_deploy_id: first, live_changed_since_deploy: false });
    expect(deploys.map((d) => [d.source, d.live])).toEqual([
      ['files_api', false],
      ['api', false],
      ['api', true],
    ]);
    expect(deploys[2]).toMatchObject({ id: first, file_count: 2, bytes: 5 });
    expect(String(deploys[2]!.key_prefix)).toMatch(/^hp_live_/);
    // The files API state comes back too.
    await api.call('POST', `/api/v1/deploys/${deploys[0]!.id as string}/restore`);
    expect((await page(host, '/extra.html')).text).toBe('through the files API');
    // Counters follow the switch.
    const limits = await hp.request('/api/v1/files/storage-limits', {
      headers: { 'x-api-key': site.apiKey },
    });
    expect(((await limits.json()) as { usage: { files: { current: number } } }).usage.files.current).toBe(2);
  });

  it('restores the live deploy as a no-op while its files are live, and as a switch once the files API changed them', async () => {
    const [site, api] = await siteWithClient('dep-restore-live');
    const host = 'dep-restore-live.localhost:8080';
    await api.deploy({ 'index.html': 'v1', 'a/one.html': 'one' });
    const second = await api.deploy({ 'index.html': 'v2' });
    const before = (await api.call('GET', `/api/v1/deploys/${second}`)).body.deploy as Record<
      string,
      unknown
    >;
    expect(before).toMatchObject({ live: true, changes: { added: 0, changed: 1, removed: 1 } });
    const listed = async () => (await api.call('GET', '/api/v1/deploys')).body.deploys as unknown[];
    const count = (await listed()).length;

    // A repeated rollback (a retry whose first answer was lost): 200, nothing switched or recorded.
    const again = await api.call('POST', `/api/v1/deploys/${second}/restore`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: second, state: 'published', live: true });
    const after = (await api.call('GET', `/api/v1/deploys/${second}`)).body.deploy as Record<string, unknown>;
    expect(after.changes).toEqual(before.changes);
    expect((await listed()).length).toBe(count);

    // The live files changed through the files API: restoring the live deploy puts its files back.
    await upload(hp, site, 'extra.html', 'through the files API');
    expect((await api.call('POST', `/api/v1/deploys/${second}/restore`)).status).toBe(200);
    expect((await page(host, '/extra.html')).status).toBe(404);
    expect((await page(host, '/')).text).toBe('v2');
    expect((await listed()).length).toBe(count + 1); // the files API's state, recorded first
  });
});
