import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash } from '../../../src/blob/index.js';
import { deployClient, sha256, type DeployClient } from '../../support/deploys-api.js';
import { eventually } from '../../support/eventually.js';
import { backends, startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

// A deploy's life around its happy path (issue 30): failed deploys never lock a site (refused before
// they exist when the manifest says enough, cancelled, expired, displaced at the cap), and a deploy
// laid over the live files (base: live) keeps what it does not list; answers count the change.

const rowsOf = <R>(result: unknown) => (result as { rows: R[] }).rows;

describe.each(backends)('deploy lifecycle (%s)', (backend) => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  async function siteWithClient(slug: string): Promise<[TestSite, DeployClient]> {
    const site = await hp.createSite(slug);
    return [site, deployClient(hp.port, site.apiKey)];
  }
  const page = async (slug: string, path: string) => {
    const res = await hp.request(path, { host: `${slug}.localhost:8080` });
    return { status: res.status, text: await res.text() };
  };
  const total = async (api: DeployClient) =>
    ((await api.call('GET', '/api/v1/deploys')).body.pagination as { total_items: number }).total_items;
  const unfinished = async (siteId: number) =>
    rowsOf<{ n: number }>(
      await hp.services.store.db.execute(
        sql`select count(*)::int as n from deploys where site_id = ${siteId}::int and state in ('uploading', 'ready')`,
      ),
    )[0]!.n;

  describe('cancel: DELETE /api/v1/deploys/{id}', () => {
    it('cancels an unfinished deploy (204): it is gone, its uploads and finalize answer 404', async () => {
      const [, api] = await siteWithClient('cancel-open');
      const { id } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b') });
      expect((await api.put(id, sha256('a'), 'a')).status).toBe(200);
      const gone = await api.call('DELETE', `/api/v1/deploys/${id}`);
      expect(gone.status).toBe(204);
      expect((await api.call('GET', `/api/v1/deploys/${id}`)).status).toBe(404);
      expect((await api.put(id, sha256('b'), 'b')).status).toBe(404);
      expect((await api.call('POST', `/api/v1/deploys/${id}/finalize`)).status).toBe(404);
      expect((await api.call('DELETE', `/api/v1/deploys/${id}`)).status).toBe(404);
      expect(await total(api)).toBe(0);
    });

    it('refuses the live deploy (409); deletes a draft and an earlier published deploy, previews included', async () => {
      const [site, api] = await siteWithClient('cancel-kinds');
      const first = await api.deploy({ 'index.html': 'v1' });
      const live = await api.deploy({ 'index.html': 'v2' });
      const draft = await api.deploy({ 'index.html': 'draft' }, true);
      const refused = await api.call('DELETE', `/api/v1/deploys/${live}`);
      expect(refused.status).toBe(409);
      expect(refused.body.message).toMatch(/live/);
      expect((await page(`${draft}--${site.slug}`, '/')).text).toBe('draft');
      expect((await api.call('DELETE', `/api/v1/deploys/${draft}`)).status).toBe(204);
      expect((await api.call('DELETE', `/api/v1/deploys/${first}`)).status).toBe(204);
      expect((await page(`${draft}--${site.slug}`, '/')).status).toBe(404);
      expect((await page(`${first}--${site.slug}`, '/')).status).toBe(404);
      expect((await page(site.slug, '/')).text).toBe('v2');
      const listed = await api.call('GET', '/api/v1/deploys');
      expect((listed.body.deploys as Array<{ id: string }>).map((d) => d.id)).toEqual([live]);
    });

    it("releases the cancelled deploy's blobs to the orphan sweep", async () => {
      const [, api] = await siteWithClient('cancel-blobs');
      const content = 'only the cancelled deploy had these bytes';
      const { id } = await api.create({ 'a.html': sha256(content), 'b.html': sha256('never sent') });
      await api.put(id, sha256(content), content);
      const key = blobKeyForHash(sha256(content));
      await hp.services.files.sweepOrphanBlobs(0);
      expect(await hp.services.blobs.head(key)).toBeTruthy();
      expect((await api.call('DELETE', `/api/v1/deploys/${id}`)).status).toBe(204);
      await hp.services.files.sweepOrphanBlobs(0);
      expect(await hp.services.blobs.head(key)).toBeFalsy();
    });
  });

  describe('unfinished deploys never block a new one', () => {
    it('twenty failed deploys, then a good one goes live; the least recently active one made room', async () => {
      const [site, api] = await siteWithClient('twenty-failed');
      const failed: string[] = [];
      for (let i = 0; i < 20; i++) {
        const { id } = await api.create({ 'index.html': sha256(`never uploaded ${i}`) });
        failed.push(id);
      }
      // One of them failed on a file over the limit (the upload refused; the deploy left as it was).
      const big = Buffer.alloc(10 * 1024 * 1024 + 1, 1);
      const { id: tooBig } = await api.create({ 'big.pdf': sha256(big) });
      expect((await api.put(tooBig, sha256(big), big)).status).toBe(400);
      expect(await unfinished(site.siteId)).toBe(20);
      expect((await api.call('GET', `/api/v1/deploys/${failed[0]}`)).status).toBe(404);

      const good = await api.deploy({ 'index.html': '<h1>good</h1>' });
      expect((await page(site.slug, '/')).text).toBe('<h1>good</h1>');
      expect((await api.call('GET', `/api/v1/deploys/${good}`)).body.deploy).toMatchObject({ live: true });
      expect(await unfinished(site.siteId)).toBeLessThanOrEqual(20);
      expect((await api.call('GET', `/api/v1/deploys/${failed[1]}`)).status).toBe(404);
      expect((await api.call('GET', `/api/v1/deploys/${tooBig}`)).status).toBe(200);
    });
  });

  describe('refused before a deploy exists', () => {
    it('declared sizes over their type limit: 400 naming every such file, no deploy left', async () => {
      const [, api] = await siteWithClient('pre-sizes');
      const res = await api.call('POST', '/api/v1/deploys', {
        files: {
          'index.html': sha256('i'),
          'a.pdf': sha256('a'),
          'clip.mp4': sha256('c'),
          'b.css': sha256('b'),
        },
        sizes: {
          'index.html': 10,
          'a.pdf': 11 * 1024 * 1024,
          'clip.mp4': 51 * 1024 * 1024,
          'b.css': 12 * 1024 * 1024,
        },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('File too large');
      expect(res.body.message).toMatch(/a\.pdf/);
      expect(res.body.message).toMatch(/clip\.mp4/);
      expect(res.body.files).toEqual([
        { path: 'a.pdf', size: 11 * 1024 * 1024, max_size_bytes: 10 * 1024 * 1024 },
        { path: 'b.css', size: 12 * 1024 * 1024, max_size_bytes: 10 * 1024 * 1024 },
        { path: 'clip.mp4', size: 51 * 1024 * 1024, max_size_bytes: 50 * 1024 * 1024 },
      ]);
      expect(await total(api)).toBe(0);
    });

    it("declared sizes over the plan's storage: 403 before a deploy exists", async () => {
      const [, api] = await siteWithClient('pre-storage');
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const res = await api.call('POST', '/api/v1/deploys', {
          files: { 'a.html': sha256('a'), 'b.html': sha256('b') },
          sizes: { 'a.html': 600, 'b.html': 600 },
        });
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('Storage limit exceeded');
      });
      expect(await total(api)).toBe(0);
    });

    it('a size for a path the manifest does not name is a 400', async () => {
      const [, api] = await siteWithClient('pre-stray');
      const res = await api.call('POST', '/api/v1/deploys', {
        files: { 'a.html': sha256('a') },
        sizes: { 'b.html': 1 },
      });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/b\.html/);
    });

    it('file types: one 400 naming every refused file', async () => {
      const [, api] = await siteWithClient('pre-types');
      const res = await api.call('POST', '/api/v1/deploys', {
        files: { 'index.html': sha256('i'), 'notes.md': sha256('n'), 'tool.exe': sha256('t') },
      });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/notes\.md/);
      expect(res.body.message).toMatch(/tool\.exe/);
    });
  });

  describe('expiry of abandoned deploys', () => {
    it('the sweep deletes unfinished deploys idle for the window, keeps active and finalized ones, once across sweepers', async () => {
      const [site, api] = await siteWithClient('expiry');
      const done = await api.deploy({ 'index.html': 'live' });
      const { id: idle } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b') });
      const { id: idle2 } = await api.create({ 'c.html': sha256('c') });
      const { id: active } = await api.create({ 'a.html': sha256('a'), 'd.html': sha256('d') });
      // Nobody touched them for longer than the window (15 min by default).
      await hp.services.store.db
        .execute(sql`update deploys set last_activity_at = now() - interval '16 minutes'
        where id in (${idle}, ${idle2}, ${active}, ${done})`);
      // An upload is activity.
      expect((await api.put(active, sha256('d'), 'd')).status).toBe(200);
      const removed = await Promise.all([
        hp.services.deploys.sweepAbandoned(),
        hp.services.deploys.sweepAbandoned(),
      ]);
      expect(removed[0]! + removed[1]!).toBe(2);
      for (const id of [idle, idle2])
        expect((await api.call('GET', `/api/v1/deploys/${id}`)).status).toBe(404);
      expect((await api.call('GET', `/api/v1/deploys/${active}`)).status).toBe(200);
      expect((await api.call('GET', `/api/v1/deploys/${done}`)).status).toBe(200);
      expect(await unfinished(site.siteId)).toBe(1);
    });
  });

  describe('base: live', () => {
    it('lays the manifest over the live files, drops `removed`, and every answer counts the change', async () => {
      const [site, api] = await siteWithClient('base-live');
      await api.deploy({
        'index.html': 'v1',
        'about.html': 'about',
        'old.html': 'old',
        'blog/a.html': 'a',
        'blog/b.html': 'b',
      });
      const res = await api.call('POST', '/api/v1/deploys', {
        base: 'live',
        files: { 'index.html': sha256('v2'), 'new.html': sha256('new') },
        removed: ['old.html', 'blog'],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ file_count: 3, changes: { added: 1, changed: 1, removed: 3 } });
      const id = res.body.id as string;
      for (const [content, hash] of [
        ['v2', sha256('v2')],
        ['new', sha256('new')],
      ])
        if ((res.body.required as string[]).includes(hash!)) await api.put(id, hash!, content!);
      const done = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
      expect(done.body).toMatchObject({ live: true, changes: { added: 1, changed: 1, removed: 3 } });
      expect(await page(site.slug, '/')).toEqual({ status: 200, text: 'v2' });
      expect(await page(site.slug, '/about.html')).toEqual({ status: 200, text: 'about' });
      expect(await page(site.slug, '/new.html')).toEqual({ status: 200, text: 'new' });
      for (const gone of ['/old.html', '/blog/a.html'])
        expect((await page(site.slug, gone)).status).toBe(404);
      const listed = await api.call('GET', '/api/v1/deploys');
      expect((listed.body.deploys as Array<Record<string, unknown>>)[0]).toMatchObject({
        id,
        changes: { added: 1, changed: 1, removed: 3 },
      });
    });

    it('replace stays the default and says how much it removes', async () => {
      const [, api] = await siteWithClient('base-replace');
      await api.deploy({ 'index.html': 'v1', 'a.html': 'a', 'b.html': 'b' });
      const res = await api.call('POST', '/api/v1/deploys', { files: { 'index.html': sha256('v1') } });
      expect(res.body).toMatchObject({ file_count: 1, changes: { added: 0, changed: 0, removed: 2 } });
    });

    it('refuses removed without base live, a path both listed and removed, and a file over a live folder', async () => {
      const [, api] = await siteWithClient('base-refusals');
      await api.deploy({ 'index.html': 'v1', 'docs/a.html': 'a' });
      const h = sha256('x');
      for (const body of [
        { files: { 'x.html': h }, removed: ['index.html'] },
        { base: 'live', files: { 'x.html': h }, removed: ['x.html'] },
        { base: 'live', files: { 'index.html/x.html': h } },
      ]) {
        const res = await api.call('POST', '/api/v1/deploys', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      // A folder of the live site dropped whole by its path.
      const ok2 = await api.call('POST', '/api/v1/deploys', {
        base: 'live',
        files: { 'docs.html': h },
        removed: ['docs'],
      });
      expect(ok2.body).toMatchObject({ file_count: 2, changes: { added: 1, changed: 0, removed: 1 } });
    });
  });

  describe('message', () => {
    it('is stored with the deploy and shown in the list and the deploy; over 500 characters is a 400', async () => {
      const [, api] = await siteWithClient('message');
      const res = await api.call('POST', '/api/v1/deploys', {
        files: { 'index.html': sha256('m') },
        message: 'Fix the header (#42)',
      });
      expect(res.body).toMatchObject({ message: 'Fix the header (#42)' });
      const id = res.body.id as string;
      expect((await api.call('GET', `/api/v1/deploys/${id}`)).body.deploy).toMatchObject({
        message: 'Fix the header (#42)',
      });
      expect((await api.call('GET', '/api/v1/deploys')).body.deploys).toMatchObject([
        { id, message: 'Fix the header (#42)' },
      ]);
      const long = await api.call('POST', '/api/v1/deploys', {
        files: { 'index.html': sha256('m') },
        message: 'x'.repeat(501),
      });
      expect(long.status).toBe(400);
      // PostgreSQL text holds no NUL: a 400 naming the field, never the insert's 500.
      const nul = await api.call('POST', '/api/v1/deploys', {
        files: { 'index.html': sha256('m') },
        message: 'a\u0000b',
      });
      expect(nul.status).toBe(400);
      expect(nul.body.message).toMatch(/message.*NUL/);
      const none = await api.call('POST', '/api/v1/deploys', { files: { 'index.html': sha256('m') } });
      expect(none.body).toMatchObject({ message: null });
    });
  });
});

describe('expiry with a short configured window (pglite+fs)', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { env: { HOSTPLANE_DEPLOY_IDLE_SECONDS: '1' } });
  });
  afterAll(() => hp?.stop());

  it('an abandoned deploy is gone once idle for the window', async () => {
    const site = await hp.createSite('short-window');
    const api = deployClient(hp.port, site.apiKey);
    const { id } = await api.create({ 'index.html': sha256('abandoned') });
    await eventually('the idle deploy swept', async () => {
      await hp.services.deploys.sweepAbandoned();
      return (await api.call('GET', `/api/v1/deploys/${id}`)).status === 404;
    });
  });
});
