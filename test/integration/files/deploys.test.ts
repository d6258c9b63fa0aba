import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSignIn, call, invitedOwner } from '../../support/account-api.js';
import { eventually } from '../../support/eventually.js';
import { deployClient, sha256, type DeployClient } from '../../support/deploys-api.js';
import {
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

describe.each(backends)('deploys (%s)', (backend) => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(async () => {
    await hp?.stop();
  });

  async function siteWithClient(slug: string, plan?: 'free' | 'business'): Promise<[TestSite, DeployClient]> {
    const site = await hp.createSite(slug, plan ? { plan } : {});
    return [site, deployClient(hp.port, site.apiKey)];
  }
  const page = async (host: string, path: string) => {
    const res = await hp.request(path, { host });
    return { status: res.status, text: await res.text() };
  };

  it('asks only for the blobs the site lacks, never for bytes only another site has', async () => {
    const [site, api] = await siteWithClient('dep-missing');
    await upload(hp, site, 'old.html', 'already here');
    const [, other] = await siteWithClient('dep-missing-other');
    await other.deploy({ 'secret.html': 'only the other site has this' });

    const files = {
      'index.html': sha256('already here'),
      'new.html': sha256('new bytes'),
      'copy.html': sha256('new bytes'),
      'guess.html': sha256('only the other site has this'),
    };
    const { id, required } = await api.create(files);
    expect(required.sort()).toEqual([sha256('new bytes'), sha256('only the other site has this')].sort());
    // The other site's bytes must be sent; a wrong body is refused and nothing is recorded.
    const wrong = await api.put(id, sha256('only the other site has this'), 'guessing');
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ error: 'Hash mismatch', actual: sha256('guessing') });
    const notInManifest = await api.put(id, sha256('guessing'), 'guessing');
    expect(notInManifest.status).toBe(404);
    const early = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
    expect(early.status).toBe(409);

    expect((await api.put(id, sha256('new bytes'), 'new bytes')).body).toMatchObject({
      state: 'uploading',
      remaining: 1,
    });
    expect(
      (await api.put(id, sha256('only the other site has this'), 'only the other site has this')).body,
    ).toMatchObject({ state: 'ready', remaining: 0 });
    const done = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ state: 'published', live: true, file_count: 4 });

    const host = 'dep-missing.localhost:8080';
    expect(await page(host, '/')).toEqual({ status: 200, text: 'already here' });
    expect(await page(host, '/copy.html')).toEqual({ status: 200, text: 'new bytes' });
    // The whole file set switched: what the manifest does not name is gone.
    expect((await page(host, '/old.html')).status).toBe(404);

    // An unchanged re-deploy uploads nothing.
    expect((await api.create(files)).required).toEqual([]);
  });

  it('claims only blobs the site references: a hash nobody uploads leaves no claim row', async () => {
    const [site, api] = await siteWithClient('dep-claims');
    await upload(hp, site, 'kept.html', 'kept bytes');
    const never = sha256('never uploaded by anyone');
    const { required } = await api.create({ 'kept.html': sha256('kept bytes'), 'never.html': never });
    expect(required).toEqual([never]);
    const claims = async (hash: string) =>
      (
        (await hp.services.store.db.execute(
          sql`select count(*)::int as n from blob_claims where hash = ${hash}`,
        )) as unknown as { rows: Array<{ n: number }> }
      ).rows[0]!.n;
    expect(await claims(never)).toBe(0);
    expect(await claims(sha256('kept bytes'))).toBe(1);
  });

  it('rewrites only what a redeploy changes: the files it keeps keep their rows and Last-Modified', async () => {
    const [site, api] = await siteWithClient('dep-diff');
    const host = `${site.slug}.localhost:8080`;
    await api.deploy({ 'a.html': 'a one', 'docs/b.html': 'b stays', 'old/c.html': 'c goes' });
    const rows = async () =>
      Object.fromEntries(
        (
          (await hp.services.store.db.execute(
            sql`select path, kind, updated_at::text as at from site_files where site_id = ${site.siteId}::int`,
          )) as unknown as { rows: Array<{ path: string; kind: string; at: string }> }
        ).rows.map((r) => [r.path, `${r.kind} ${r.at}`]),
      );
    const before = await rows();
    await api.deploy({ 'a.html': 'a two', 'docs/b.html': 'b stays', 'new/d.html': 'd comes' });
    const after = await rows();
    expect(Object.keys(after).sort()).toEqual(['a.html', 'docs', 'docs/b.html', 'new', 'new/d.html']);
    expect(after['docs/b.html']).toBe(before['docs/b.html']);
    expect(after.docs).toBe(before.docs);
    expect(after['a.html']).not.toBe(before['a.html']);
    expect(await page(host, '/a.html')).toEqual({ status: 200, text: 'a two' });
    expect(await page(host, '/docs/b.html')).toEqual({ status: 200, text: 'b stays' });
    expect((await page(host, '/old/c.html')).status).toBe(404);
    // The site's counters match its set: 3 files of 5 + 7 + 7 bytes, 2 folders.
    const [counters] = (
      (await hp.services.store.db.execute(
        sql`select file_count, folder_count, storage_bytes::int as bytes from sites where id = ${site.siteId}::int`,
      )) as unknown as { rows: Array<Record<string, number>> }
    ).rows;
    expect(counters).toEqual({ file_count: 3, folder_count: 2, bytes: 19 });
  });

  it('counts concurrent uploads of a deploy exactly, the same blob twice included', async () => {
    const [, api] = await siteWithClient('dep-concurrent');
    const contents = Array.from({ length: 20 }, (_, i) => `blob ${i}`);
    const { id, required } = await api.create(
      Object.fromEntries(contents.map((c, i) => [`p${i}.html`, sha256(c)])),
    );
    expect(required).toHaveLength(20);
    const answers = await Promise.all(
      [...contents, ...contents.slice(0, 5)].map((c) => api.put(id, sha256(c), c)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const got = await api.call('GET', `/api/v1/deploys/${id}`);
    expect(got.body.deploy).toMatchObject({ state: 'ready', bytes: contents.join('').length });
    expect((await api.call('POST', `/api/v1/deploys/${id}/finalize`)).status).toBe(200);
  });

  it('refuses manifests that break the upload rules', async () => {
    const [, api] = await siteWithClient('dep-rules');
    const h = sha256('x');
    for (const files of [
      { '../up.html': h },
      { '/abs.html': h },
      { 'app.db': h },
      { 'data.db/x.html': h },
      { 'a.html': h, 'a.html/b.html': h },
      { 'a.html': 'not-a-hash' },
    ]) {
      const res = await api.call('POST', '/api/v1/deploys', { files });
      expect(res.status, JSON.stringify(files)).toBe(400);
    }
  });

  it('serves a draft at its preview host only, until it is published', async () => {
    const [, api] = await siteWithClient('dep-draft');
    await api.deploy({ 'index.html': 'live one' });
    const draft = await api.deploy(
      { 'index.html': 'the draft', 'blog/index.html': 'blog', 'empty.html': '' },
      true,
    );
    const host = 'dep-draft.localhost:8080';
    const preview = `${draft}--dep-draft.localhost:8080`;
    expect((await page(host, '/')).text).toBe('live one');
    expect(await page(preview, '/')).toEqual({ status: 200, text: 'the draft' });
    expect((await hp.request('/blog', { host: preview })).status).toBe(301);
    expect((await page(preview, '/nothing.html')).status).toBe(404);
    expect(await page(preview, '/empty.html')).toEqual({ status: 200, text: '' });
    // Not a deploy of this site: no preview.
    expect((await page(`${draft}--dep-missing.localhost:8080`, '/')).status).toBe(404);

    const got = await api.call('GET', `/api/v1/deploys/${draft}`);
    expect(got.body).toMatchObject({
      deploy: { state: 'draft', live: false, preview_url: `http://${draft}--dep-draft.localhost:8080` },
      files: [
        { path: 'blog/index.html', hash: sha256('blog'), size: 4 },
        { path: 'empty.html', hash: sha256(''), size: 0 },
        { path: 'index.html', hash: sha256('the draft'), size: 9 },
      ],
    });
    expect((await api.call('POST', `/api/v1/deploys/${draft}/restore`)).status).toBe(409);
    const published = await api.call('POST', `/api/v1/deploys/${draft}/publish`);
    expect(published.body).toMatchObject({ state: 'published', live: true });
    expect((await page(host, '/')).text).toBe('the draft');
    expect((await page(host, '/blog/')).text).toBe('blog');
  });

  it('checks the plan against the new file set, SQLite databases counted', async () => {
    const [site, api] = await siteWithClient('dep-quota');
    const files = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`p${i}.html`, sha256(`${i}`)]));
    const res = await api.call('POST', '/api/v1/deploys', { files });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'File limit exceeded' });
    // 200 files fit the free plan, but not beside a database: the switch refuses, nothing changes.
    expect(await hp.services.files.registerDatabase(site.siteId, 'app.db')).toBe(true);
    const within = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}.html`, `${i}`]));
    const { id, required } = await api.create(
      Object.fromEntries(Object.entries(within).map(([p, c]) => [p, sha256(c)])),
    );
    for (const content of Object.values(within)) {
      if (required.includes(sha256(content)))
        expect((await api.put(id, sha256(content), content)).status).toBe(200);
    }
    const refused = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'File limit exceeded' });
    expect((await page('dep-quota.localhost:8080', '/p0.html')).status).toBe(404);
    expect((await api.call('GET', `/api/v1/deploys/${id}`)).body.deploy).toMatchObject({ state: 'ready' });
  });

  it('counts unpublished deploys against the storage limit and previews only finalized ones', async () => {
    await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
      const [, api] = await siteWithClient('dep-pending');
      const a = 'a'.repeat(600);
      const b = 'b'.repeat(600);
      const first = await api.create({ 'index.html': sha256(a) }, true);
      expect((await api.put(first.id, sha256(a), a)).body).toMatchObject({ state: 'ready' });
      // Not finalized: no preview yet (another spelling of the host: a miss is remembered 2 s).
      expect((await page(`${first.id}--DEP-PENDING.localhost:8080`, '/')).status).toBe(404);
      expect((await api.call('POST', `/api/v1/deploys/${first.id}/finalize`)).status).toBe(200);
      expect(await page(`${first.id}--dep-pending.localhost:8080`, '/')).toEqual({ status: 200, text: a });
      // A second draft of 600 B would hold 1200 B in unpublished deploys: refused at its upload.
      const second = await api.create({ 'index.html': sha256(b) }, true);
      const refused = await api.put(second.id, sha256(b), b);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ error: 'Storage limit exceeded' });
    });
  });

  it('checks a draft against the plan when it is finalized, like a publish', async () => {
    await withFreeLimits({ maxFiles: 2 }, async () => {
      const [site, api] = await siteWithClient('dep-draft-quota');
      expect(await hp.services.files.registerDatabase(site.siteId, 'app.db')).toBe(true);
      const { id, required } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b') }, true);
      for (const c of ['a', 'b']) if (required.includes(sha256(c))) await api.put(id, sha256(c), c);
      const refused = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ error: 'File limit exceeded' });
    });
  });

  it('keeps the plan retention of deploys (free: 10), always the live one', async () => {
    const [, api] = await siteWithClient('dep-retention');
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await api.deploy({ 'index.html': `v${i}` }));
    await api.call('POST', `/api/v1/deploys/${ids[2]}/restore`);
    const list = await api.call('GET', '/api/v1/deploys');
    const kept = (list.body.deploys as Array<{ id: string }>).map((d) => d.id);
    expect(kept).toContain(ids[2]);
    expect(kept.length).toBeLessThanOrEqual(11);
    expect(kept).not.toContain(ids[0]);
    expect((await api.call('GET', `/api/v1/deploys/${ids[0]}`)).status).toBe(404);

    // A retained deploy keeps its blob through the orphan sweep; a pruned one's is released.
    await hp.services.files.sweepOrphanBlobs(0);
    const has = (content: string) => hp.services.blobs.head(`blobs/${sha256(content)}`);
    expect(await has('v3')).toBeTruthy();
    expect(await has('v0')).toBeFalsy();
    const restored = await api.call('POST', `/api/v1/deploys/${ids[3]}/restore`);
    expect(restored.status).toBe(200);
    expect(await hp.request('/', { host: 'dep-retention.localhost:8080' }).then((r) => r.text())).toBe('v3');
  });

  // PostgreSQL only (registered there, not skipped here): another connection holds the site lock
  // while both switches queue behind it; PGlite has one connection.
  if (backend === 'postgres+s3')
    it('prunes in the switch: a restore queued behind it finds the pruned deploy gone (404, never a 500)', async () => {
      const [site, api] = await siteWithClient('dep-prune-race');
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await api.deploy({ 'index.html': `v${i}` }));
      const next = await api.create({ 'index.html': sha256('next') });
      await api.put(next.id, sha256('next'), 'next');
      const db = hp.services.store.db;
      const waiting = async () =>
        (
          (await db.execute(sql`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`)) as unknown as {
            rows: Array<{ n: number }>;
          }
        ).rows[0]!.n;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = db.transaction(async (tx) => {
        await tx.execute(sql`select id from sites where id = ${site.siteId}::int for update`);
        locked();
        await held;
      });
      await isLocked;
      const finalize = api.call('POST', `/api/v1/deploys/${next.id}/finalize`);
      await eventually('the finalize waiting for the site lock', async () => (await waiting()) >= 1);
      const restore = api.call('POST', `/api/v1/deploys/${ids[0]}/restore`);
      await eventually('the restore waiting too', async () => (await waiting()) >= 2);
      release();
      await holder;
      expect((await finalize).status).toBe(200);
      const restored = await restore;
      expect(restored.status).toBe(404);
      expect(restored.body).toMatchObject({ error: 'Not found' });
      expect((await api.call('GET', '/api/v1/deploys')).body.live_deploy_id).toBe(next.id);
    });

  it('keeps drafts in their own window (free: 5): drafts never prune a rollback target', async () => {
    const [, api] = await siteWithClient('dep-draft-retention');
    const published: string[] = [];
    for (let i = 0; i < 3; i++) published.push(await api.deploy({ 'index.html': `p${i}` }));
    const drafts: string[] = [];
    for (let i = 0; i < 12; i++) drafts.push(await api.deploy({ 'index.html': `d${i}` }, true));
    const list = await api.call('GET', '/api/v1/deploys?per_page=100');
    const kept = (list.body.deploys as Array<{ id: string }>).map((d) => d.id);
    expect(kept.filter((id) => published.includes(id))).toHaveLength(3);
    expect(kept.filter((id) => drafts.includes(id)).sort()).toEqual(drafts.slice(-5).sort());
    expect((await api.call('POST', `/api/v1/deploys/${published[0]}/restore`)).status).toBe(200);
  });

  it('never replaces a SQLite database of the site', async () => {
    const [site, api] = await siteWithClient('dep-sqlite', 'business');
    expect(await hp.services.files.registerDatabase(site.siteId, 'data/app.db')).toBe(true);
    await api.deploy({ 'index.html': 'site', 'data/readme.html': 'beside the database' });
    await api.deploy({ 'index.html': 'site 2' });
    const rows = await hp.services.files.findAll(site.siteId, ['data/app.db', 'data', 'data/readme.html']);
    expect(rows.map((r) => [r.path, r.kind]).sort()).toEqual([
      ['data', 'folder'],
      ['data/app.db', 'database'],
    ]);
    const clash = await api.call('POST', '/api/v1/deploys', { files: { 'data/app.db': sha256('x') } });
    expect(clash.status).toBe(400);
    const limits = await hp.request('/api/v1/files/storage-limits', {
      headers: { 'x-api-key': site.apiKey },
    });
    expect(((await limits.json()) as { usage: { files: { current: number } } }).usage.files.current).toBe(2);
  });

  it('records which client made each deploy: the console session, the CLI, MCP, any other client', async () => {
    const owner = await invitedOwner(hp, `dep-client-${backend.replace(/\W/g, '')}@example.com`);
    const created = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `dep-client-${backend.replace(/\W/g, '')}` },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = (created.body.site as { id: number }).id;
    const key = { 'x-api-key': created.body.api_key as string };
    const browser = await browserSignIn(hp, owner.email);
    const manifest = { files: { 'index.html': sha256('who') } };
    const create = async (headers: Record<string, string>) => {
      const res = await call(hp, 'POST', `/api/v1/deploys?site_id=${siteId}`, { json: manifest, headers });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as { id: string; client: string; key_prefix: string | null };
    };
    const console_ = await create({
      cookie: browser.cookie,
      'x-csrf-token': browser.csrf,
      origin: 'http://localhost:8080',
    });
    expect(console_).toMatchObject({ client: 'console', key_prefix: null });
    // A bearer session is not the console: another client of the API.
    expect(await create(owner.bearer)).toMatchObject({ client: 'api', key_prefix: null });
    expect(await create({ ...key, 'user-agent': 'hostplane-cli/0.1.0' })).toMatchObject({ client: 'cli' });
    expect(await create({ ...key, 'user-agent': 'hostplane-mcp/0.1.0' })).toMatchObject({ client: 'mcp' });
    expect(await create({ ...key, 'user-agent': 'curl/8.5.0' })).toMatchObject({ client: 'api' });
    const listed = await call(hp, 'GET', `/api/v1/deploys?site_id=${siteId}`, { headers: key });
    const clients = (listed.body.deploys as Array<{ client: string }>).map((d) => d.client);
    expect(clients).toEqual(['api', 'mcp', 'cli', 'api', 'console']);
  });
});
