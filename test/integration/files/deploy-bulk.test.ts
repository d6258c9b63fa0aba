import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FILE_BYTES } from '../../../src/files/service.js';
import { deployClient, multipart, sha256, type DeployClient } from '../../support/deploys-api.js';
import {
  backends,
  metricValue,
  rawRequest,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

// Issue 29: POST /api/v1/deploys/{id}/files carries many blobs of a deploy in one multipart request.
describe.each(backends)('bulk upload of deploy blobs (%s)', (backend) => {
  let hp: TestHostplane;
  const tag = backend === 'postgres+s3' ? 'pg' : 'pgl';
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const keys = new Map<DeployClient, string>();
  const apiKeyOf = (api: DeployClient) => keys.get(api)!;
  async function site(name: string, plan?: 'business'): Promise<[TestSite, DeployClient]> {
    const created = await hp.createSite(`${name}-${tag}`, plan ? { plan } : {});
    const api = deployClient(hp.port, created.apiKey);
    keys.set(api, created.apiKey);
    return [created, api];
  }
  const page = async (host: string, path: string) => {
    const res = await hp.request(path, { host });
    return { status: res.status, text: await res.text() };
  };
  const sizes = async (api: DeployClient, id: string) => {
    const got = await api.call('GET', `/api/v1/deploys/${id}`);
    const files = got.body.files as Array<{ path: string; size: number | null }>;
    return Object.fromEntries(files.map((f) => [f.path, f.size]));
  };

  it('takes a whole deploy in one request; finalize serves it', async () => {
    const [s, api] = await site('bulk-happy', 'business');
    await upload(hp, s, 'kept.html', 'already on the site');
    const contents = Array.from({ length: 300 }, (_, i) => `<p>page ${i}</p>${'x'.repeat(1000)}`);
    const files = Object.fromEntries(contents.map((c, i) => [`p/${i}.html`, sha256(c)]));
    files['kept.html'] = sha256('already on the site');
    const { id, required } = await api.create(files);
    expect(required).toHaveLength(300);
    // Every required blob, one of them twice, and one the site already has.
    const parts: Array<[string, string]> = contents.map((c) => [sha256(c), c]);
    parts.push([sha256(contents[7]!), contents[7]!], [sha256('already on the site'), 'already on the site']);
    const records = async () =>
      metricValue(await scrapeMetrics(hp), 'hostplane_db_operation_duration_seconds_count', {
        operation: 'commit_deploy_blobs',
        outcome: 'ok',
      });
    const recordsBefore = await records();
    const before = metricValue(await scrapeMetrics(hp), 'hostplane_deploy_bulk_parts_total', {
      result: 'received',
    });
    const res = await api.bulk(id, parts);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      received: 300,
      already_present: 2,
      missing: [],
      state: 'ready',
      remaining: 0,
    });
    const after = metricValue(await scrapeMetrics(hp), 'hostplane_deploy_bulk_parts_total', {
      result: 'received',
    });
    expect(after - before).toBe(300);
    // The 300 blobs are recorded by one statement (one per 512 blobs), not one per 64.
    expect((await records()) - recordsBefore).toBe(1);
    expect((await api.call('GET', `/api/v1/deploys/${id}`)).body.deploy).toMatchObject({
      bytes: contents.reduce((n, c) => n + c.length, 0) + 'already on the site'.length,
    });
    expect((await api.call('POST', `/api/v1/deploys/${id}/finalize`)).status).toBe(200);
    const host = `bulk-happy-${tag}.localhost:8080`;
    expect(await page(host, '/p/0.html')).toEqual({ status: 200, text: contents[0] });
    expect(await page(host, '/p/299.html')).toEqual({ status: 200, text: contents[299] });
    expect(await page(host, '/kept.html')).toEqual({ status: 200, text: 'already on the site' });
  });

  it('answers what is still missing after a partial request', async () => {
    const [, api] = await site('bulk-partial');
    const { id } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b'), 'c.html': sha256('c') });
    const res = await api.bulk(id, [[sha256('b'), 'b']]);
    expect(res.body).toMatchObject({
      received: 1,
      already_present: 0,
      missing: [sha256('a'), sha256('c')].sort(),
      state: 'uploading',
      remaining: 2,
    });
    // The same part again: nothing new, verified.
    expect((await api.bulk(id, [[sha256('b'), 'b']])).body).toMatchObject({
      received: 0,
      already_present: 1,
    });
  });

  it('keeps the blobs before a part whose bytes hash otherwise, and says which', async () => {
    const [, api] = await site('bulk-mismatch');
    const { id } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b'), 'c.html': sha256('c') });
    const res = await api.bulk(id, [
      [sha256('a'), 'a'],
      [sha256('b'), 'not b'],
      [sha256('c'), 'c'],
    ]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: 'Hash mismatch',
      expected: sha256('b'),
      actual: sha256('not b'),
      received: [sha256('a')],
    });
    expect(await sizes(api, id)).toEqual({ 'a.html': 1, 'b.html': null, 'c.html': null });
    // The client sends just the rest.
    const rest = await api.bulk(id, [
      [sha256('b'), 'b'],
      [sha256('c'), 'c'],
    ]);
    expect(rest.body).toMatchObject({ received: 2, state: 'ready', remaining: 0 });
  });

  it('refuses a part whose hash is not in the manifest (400 naming it), keeping the ones before', async () => {
    const [, api] = await site('bulk-unknown');
    const { id } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b') });
    const res = await api.bulk(id, [
      [sha256('a'), 'a'],
      [sha256('stranger'), 'stranger'],
      [sha256('b'), 'b'],
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('Bad Request');
    expect(String(res.body.message)).toContain(sha256('stranger'));
    expect(await sizes(api, id)).toEqual({ 'a.html': 1, 'b.html': null });
  });

  it('refuses bodies that are not multipart, parts not named by a hash, and plain fields', async () => {
    const [, api] = await site('bulk-shape');
    const { id } = await api.create({ 'a.html': sha256('a') });
    const json = await api.call('POST', `/api/v1/deploys/${id}/files`, { [sha256('a')]: 'a' });
    expect(json.status).toBe(415);
    const named = await api.bulk(id, [['a.html', 'a']]);
    expect(named.status).toBe(400);
    expect(String(named.body.message)).toContain('SHA-256');
    const field = await rawRequest(hp.port, `/api/v1/deploys/${id}/files`, {
      method: 'POST',
      headers: { host: 'localhost:8080', 'x-api-key': apiKeyOf(api) },
      body: 'x',
    });
    expect(field.status).toBe(415);
    const boundary = 'b0undary';
    const plain = await rawRequest(hp.port, `/api/v1/deploys/${id}/files`, {
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'x-api-key': apiKeyOf(api),
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      body: `--${boundary}\r\nContent-Disposition: form-data; name="${sha256('a')}"\r\n\r\na\r\n--${boundary}--\r\n`,
    });
    expect(plain.status).toBe(400);
    const broken = await rawRequest(hp.port, `/api/v1/deploys/${id}/files`, {
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'x-api-key': apiKeyOf(api),
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      body: `--${boundary}\r\nContent-Disposition: form-data; name="${sha256('a')}"; filename="x"\r\n\r\na`,
    });
    expect(broken.status).toBe(400);
    const empty = await api.bulk(id, []);
    expect(empty.status).toBe(400);
    // Nothing was stored by any of them.
    expect(await sizes(api, id)).toEqual({ 'a.html': null });
  });

  it('refuses more than 1000 parts', async () => {
    const [, api] = await site('bulk-count', 'business');
    const contents = Array.from({ length: 1001 }, (_, i) => `n${i}`);
    const { id } = await api.create(Object.fromEntries(contents.map((c, i) => [`${i}.html`, sha256(c)])));
    const res = await api.bulk(
      id,
      contents.map((c) => [sha256(c), c]),
    );
    expect(res.status).toBe(400);
    expect(String(res.body.message)).toContain('at most 1000 parts');
    // 1000 parts are fine.
    const ok = await api.bulk(
      id,
      contents.slice(0, 1000).map((c) => [sha256(c), c]),
    );
    expect(ok.body).toMatchObject({ remaining: 1, missing: [sha256(contents[1000]!)] });
  });

  it('refuses a body over 50 MB: before reading it when its length says so, else as it passes', async () => {
    const [s, api] = await site('bulk-bytes', 'business');
    const { id } = await api.create({ 'a.html': sha256('a') });
    const declared = await rawRequest(hp.port, `/api/v1/deploys/${id}/files`, {
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'x-api-key': s.apiKey,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(50 * 1024 * 1024 + 1),
        // The body is never sent: this connection must not carry another request.
        connection: 'close',
      },
    });
    expect(declared.status).toBe(413);
  });

  it('refuses a chunked body once it passes 50 MB', async () => {
    const [s, api] = await site('bulk-chunked', 'business');
    // Chunked: six blobs of 9 MB; the sixth passes 50 MB.
    const blobs = Array.from({ length: 6 }, (_, i) => Buffer.alloc(9 * 1024 * 1024, i + 1));
    const big = await api.create(Object.fromEntries(blobs.map((b, i) => [`${i}.html`, sha256(b)])));
    const { body, contentType } = multipart(blobs.map((b) => [sha256(b), b]));
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: hp.port,
          path: `/api/v1/deploys/${big.id}/files`,
          method: 'POST',
          headers: { host: 'localhost:8080', 'x-api-key': s.apiKey, 'content-type': contentType },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let at = 0; at < body.length; at += 1024 * 1024) req.write(body.subarray(at, at + 1024 * 1024));
      req.end();
    });
    expect(status).toBe(413);
  });

  it("holds each part to its paths' limits: 10 MB unless every path is a video", async () => {
    const [, api] = await site('bulk-limits', 'business');
    const big = Buffer.alloc(11 * 1024 * 1024, 7);
    const mixed = await api.create({ 'cover.mp4': sha256(big), 'big.html': sha256(big) });
    const refused = await api.bulk(mixed.id, [[sha256(big), big]]);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'File too large', max_size_bytes: MAX_FILE_BYTES });
    expect(String(refused.body.message)).toContain('big.html');

    const videos = await api.create({ 'cover.mp4': sha256(big), 'small.html': sha256('small') });
    const ok = await api.bulk(videos.id, [
      [sha256('small'), 'small'],
      [sha256(big), big],
    ]);
    expect(ok.body).toMatchObject({ received: 2, state: 'ready' });
    expect((await api.call('POST', `/api/v1/deploys/${videos.id}/finalize`)).status).toBe(200);
    const res = await hp.request('/cover.mp4', { host: `bulk-limits-${tag}.localhost:8080` });
    expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);
  });

  it('holds unpublished deploys to the storage limit, part by part', async () => {
    await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
      const [, api] = await site('bulk-storage');
      const a = 'a'.repeat(600);
      const b = 'b'.repeat(600);
      const { id } = await api.create({ 'a.html': sha256(a), 'b.html': sha256(b) });
      const res = await api.bulk(id, [
        [sha256(a), a],
        [sha256(b), b],
      ]);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: 'Storage limit exceeded' });
      expect(await sizes(api, id)).toEqual({ 'a.html': 600, 'b.html': null });
    });
  });

  it('takes no blobs for a finalized deploy', async () => {
    const [, api] = await site('bulk-final');
    const id = await api.deploy({ 'a.html': 'a' });
    expect((await api.bulk(id, [[sha256('a'), 'a']])).status).toBe(409);
  });
});
