import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FILE_BYTES } from '../../../src/files/service.js';
import { deployClient, sha256 } from '../../support/deploys-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

// Issue 28, finding 3: every path of a manifest fits its own type's limit (10 MB, 50 MB for
// videos), whatever other path names the same blob: a video's allowance never carries an 11 MiB
// blob to `big.html`.
describe.each(backends)('per-file limits in deploys (%s)', (backend) => {
  let hp: TestHostplane;
  const tag = backend === 'postgres+s3' ? 'pg' : 'pgl';
  const big = Buffer.alloc(11 * 1024 * 1024, 7);
  const bigHash = sha256(big);
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const site = async (name: string) => {
    const created = await hp.createSite(`${name}-${tag}`, { plan: 'business' });
    return { site: created, api: deployClient(hp.port, created.apiKey) };
  };

  it('refuses the upload of a blob one of whose paths is not a video', async () => {
    const { api } = await site('lim-upload');
    const { id, required } = await api.create({ 'cover.mp4': bigHash, 'big.html': bigHash });
    expect(required).toEqual([bigHash]);
    const res = await api.put(id, bigHash, big);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'File too large', max_size_bytes: MAX_FILE_BYTES });
    expect(String(res.body.message)).toContain('big.html');
    expect((await api.call('GET', `/api/v1/deploys/${id}`)).body.deploy).toMatchObject({
      state: 'uploading',
    });
    // The same bytes under video names only are fine.
    const videos = await api.create({ 'cover.mp4': bigHash, 'trailer.webm': bigHash });
    expect((await api.put(videos.id, bigHash, big)).status).toBe(200);
    expect((await api.call('POST', `/api/v1/deploys/${videos.id}/finalize`)).status).toBe(200);
  });

  it('refuses a manifest naming a blob the site already has under a larger allowance', async () => {
    const { site: s, api } = await site('lim-known');
    // A plain video upload puts the bytes on the site.
    const form = new FormData();
    form.append('path', 'cover.mp4');
    form.append('file', new Blob([big], { type: 'video/mp4' }), 'cover.mp4');
    const uploaded = await hp.request('/api/v1/videos/upload', {
      method: 'POST',
      headers: { 'x-api-key': s.apiKey },
      form,
    });
    expect(uploaded.status).toBe(200);
    const res = await api.call('POST', '/api/v1/deploys', {
      files: { 'cover.mp4': bigHash, 'big.html': bigHash },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'File too large', max_size_bytes: MAX_FILE_BYTES });
    expect(String(res.body.message)).toContain('big.html');
    // An earlier deploy's blob is known too: refused the same way.
    await api.deploy({ 'index.html': 'v1' });
    expect((await api.call('POST', '/api/v1/deploys', { files: { 'page.html': bigHash } })).status).toBe(400);
  });

  it('checks every path again at finalize (a deploy recorded before the check)', async () => {
    const { site: s, api } = await site('lim-final');
    const videos = await api.create({ 'cover.mp4': bigHash });
    expect((await api.put(videos.id, bigHash, big)).status).toBe(200);
    // As if made before this release: the blob recorded for an .html path without its check.
    const { id } = await api.create({ 'index.html': sha256('small') });
    await hp.services.store.db.execute(sql`
      insert into deploy_files (deploy_id, site_id, path, hash, size, content_type)
      values (${id}, ${s.siteId}::int, 'big.html', ${bigHash}, ${big.length}::bigint, 'text/html; charset=utf-8')`);
    await api.put(id, sha256('small'), 'small');
    const res = await api.call('POST', `/api/v1/deploys/${id}/finalize`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'File too large' });
    expect(String(res.body.message)).toContain('big.html');
    expect((await hp.request('/big.html', { host: `lim-final-${tag}.localhost:8080` })).status).toBe(404);
  });
});
