import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { DEPLOY_RETENTION } from '../../../src/files/index.js';
import { adminCommands } from '../../../src/server/admin-socket.js';
import { call, invitedOwner } from '../../support/account-api.js';
import { deployClient } from '../../support/deploys-api.js';
import { backends, startHostplane, upload, type TestHostplane } from '../../support/hostplane.js';

// Issue 28, finding 1: a preview host (`<deploy id>--<slug>`) can never be claimed by a slug, and
// one that names no previewable deploy answers 404 forever, never another site.
describe.each(backends)('preview hosts nobody else can claim (%s)', (backend) => {
  let hp: TestHostplane;
  const tag = backend === 'postgres+s3' ? 'pg' : 'pgl';
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const page = async (host: string, path = '/') => {
    const res = await hp.request(path, { host });
    return { status: res.status, text: await res.text(), robots: res.headers.get('x-robots-tag') };
  };

  it('refuses every slug with `--`, through the account API and admin create-site', async () => {
    const victim = await hp.createSite(`victim-${tag}`);
    const draft = await deployClient(hp.port, victim.apiKey).deploy({ 'index.html': 'the preview' }, true);
    const owner = await invitedOwner(hp, `squatter-${tag}@example.com`);
    for (const slug of [`${draft}--victim-${tag}`, 'a--b', 'xn--bcher-kva']) {
      const res = await call(hp, 'POST', '/api/v1/account/sites', { json: { slug }, headers: owner.bearer });
      expect(res.status, slug).toBe(400);
      expect(res.body).toMatchObject({ error: 'Invalid slug' });
      expect(String(res.body.message)).toMatch(/--/);
    }
    const admin = adminCommands(
      hp.services.platform,
      (s) => `http://${s}.localhost:8080`,
      undefined,
      hp.services.store.db,
    );
    const refused = await admin
      .createSite({ email: `admin-${tag}@example.com`, slug: `${draft}--victim-${tag}`, plan: 'free' })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    // The admin socket answers an AppError with its status and body (socketError).
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(400);
    expect((refused as AppError).body).toMatchObject({
      error: 'Invalid slug',
      message: expect.stringMatching(/--/),
    });
    // Single hyphens stay fine.
    const fine = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `a-b-${tag}` },
      headers: owner.bearer,
    });
    expect(fine.status).toBe(201);
  });

  it('answers 404 on a pruned or unknown preview host, never a site that spells it', async () => {
    const victim = await hp.createSite(`prev-${tag}`);
    const api = deployClient(hp.port, victim.apiKey);
    await api.deploy({ 'index.html': 'live' });
    const draft = await api.deploy({ 'index.html': 'the preview' }, true);
    const previewHost = `${draft}--prev-${tag}.localhost:8080`;
    expect(await page(previewHost)).toMatchObject({ status: 200, text: 'the preview', robots: 'noindex' });
    expect(await page(previewHost, '/missing.html')).toMatchObject({ status: 404, robots: 'noindex' });
    expect((await page(`prev-${tag}.localhost:8080`)).robots).toBeNull();

    // A legacy row (made before slugs lost `--`): another tenant's site whose slug spells the host.
    const squatter = await hp.createSite(`squat-${tag}`);
    await upload(hp, squatter, 'index.html', 'the squatter');
    const unknown = `aaaaaaaaaaaa--prev-${tag}`;
    const db = hp.services.store.db;
    await db.execute(
      sql`update sites set slug = ${`${draft}--prev-${tag}`} where id = ${squatter.siteId}::int`,
    );
    const other = await hp.createSite(`unk-${tag}`);
    await upload(hp, other, 'index.html', 'another squatter');
    await db.execute(sql`update sites set slug = ${unknown} where id = ${other.siteId}::int`);
    expect(await page(`${unknown}.localhost:8080`)).toMatchObject({ status: 404, robots: 'noindex' });

    // While the deploy exists, the preview; once it is gone, 404 — never the squatter's page.
    expect((await page(previewHost)).text).toBe('the preview');
    await db.execute(sql`delete from deploys where id = ${draft}`);
    // Another spelling of the host: the first one's cached route lives 30 s.
    const gone = await page(previewHost.toUpperCase());
    expect(gone).toMatchObject({ status: 404, robots: 'noindex' });
    expect(gone.text).not.toContain('squatter');

    // A legacy slug with `--` that is not preview-shaped keeps its own host.
    const legacy = await hp.createSite(`legacy-${tag}`);
    await upload(hp, legacy, 'index.html', 'legacy page');
    await db.execute(sql`update sites set slug = ${`old--style-${tag}`} where id = ${legacy.siteId}::int`);
    expect(await page(`old--style-${tag}.localhost:8080`)).toMatchObject({
      status: 200,
      text: 'legacy page',
    });
  });

  it('a preview pruned by a switch answers 404 as soon as the switch returns, from a warm cache too', async () => {
    const site = await hp.createSite(`prune-${tag}`);
    const api = deployClient(hp.port, site.apiKey);
    const first = await api.deploy({ 'index.html': 'v0' });
    const host = `${first}--prune-${tag}.localhost:8080`;
    expect(await page(host)).toMatchObject({ status: 200, text: 'v0' });
    // The free plan keeps DEPLOY_RETENTION.free published deploys besides the live one.
    for (let i = 1; i <= DEPLOY_RETENTION.free + 1; i++) await api.deploy({ 'index.html': `v${i}` });
    expect((await api.call('GET', `/api/v1/deploys/${first}`)).status).toBe(404);
    expect(await page(host)).toMatchObject({ status: 404, robots: 'noindex' });
  });

  it('marks temporary pages and their 404s noindex', async () => {
    const res = await hp.request('/ai/publish', {
      method: 'POST',
      json: { html: '<!doctype html><html><body>hi</body></html>' },
      headers: { 'x-forwarded-for': `198.51.100.${tag === 'pg' ? 1 : 2}` },
    });
    const { url } = (await res.json()) as { url: string };
    const shown = await hp.request(new URL(url).pathname);
    expect(shown.status).toBe(200);
    expect(shown.headers.get('x-robots-tag')).toBe('noindex');
    const missing = await hp.request('/demo/view/neverPublished123');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-robots-tag')).toBe('noindex');
  });
});
