import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../support/deploys-api.js';
import {
  backends,
  rawRequest,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// POST /api/v1/deploys with an Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): a
// create repeated with the same key and body answers the deploy the first one made (replayed),
// never a second deploy; the key lives as long as its deploy, per site.
describe.each(backends)('deploy create with an Idempotency-Key (%s)', (backend) => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(async () => {
    await hp?.stop();
  });

  async function create(site: TestSite, body: unknown, key?: string) {
    const res = await rawRequest(hp.port, '/api/v1/deploys', {
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'x-api-key': site.apiKey,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      replayed: res.headers.get('idempotent-replayed'),
      body: (await res.json()) as Record<string, unknown>,
    };
  }
  const call = async (site: TestSite, method: string, path: string) => {
    const res = await rawRequest(hp.port, path, {
      method,
      headers: { host: 'localhost:8080', 'x-api-key': site.apiKey },
    });
    return { status: res.status, text: await res.text() };
  };
  const deployIds = async (site: TestSite) => {
    const list = JSON.parse((await call(site, 'GET', '/api/v1/deploys')).text) as {
      deploys: Array<{ id: string }>;
    };
    return list.deploys.map((d) => d.id);
  };
  const put = (site: TestSite, id: string, content: string) =>
    rawRequest(hp.port, `/api/v1/deploys/${id}/files/${sha256(content)}`, {
      method: 'PUT',
      headers: {
        host: 'localhost:8080',
        'x-api-key': site.apiKey,
        'content-type': 'application/octet-stream',
      },
      body: Buffer.from(content),
    });
  const manifest = (contents: Record<string, string>) => ({
    files: Object.fromEntries(Object.entries(contents).map(([p, c]) => [p, sha256(c)])),
  });

  it('the same key and body twice: one deploy, the second answer replayed with what is still missing', async () => {
    const site = await hp.createSite('idem-twice');
    const body = { ...manifest({ 'index.html': 'one', 'two.html': 'two' }), message: 'first' };
    const first = await create(site, body, 'key-twice-1');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.replayed).toBeNull();
    expect((first.body.required as string[]).sort()).toEqual([sha256('one'), sha256('two')].sort());

    const again = await create(site, body, 'key-twice-1');
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.body).toMatchObject({
      success: true,
      id: first.body.id,
      state: 'uploading',
      message: 'first',
    });
    expect(Object.keys(again.body).sort()).toEqual(Object.keys(first.body).sort());

    // `required` is what the deploy still lacks now, its state as it is now.
    expect((await put(site, first.body.id as string, 'one')).status).toBe(200);
    const later = await create(site, body, 'key-twice-1');
    expect(later).toMatchObject({ status: 200, replayed: 'true' });
    expect(later.body).toMatchObject({ id: first.body.id, required: [sha256('two')] });
    expect((await put(site, first.body.id as string, 'two')).status).toBe(200);
    const ready = await create(site, body, 'key-twice-1');
    expect(ready.body).toMatchObject({ id: first.body.id, state: 'ready', required: [] });

    expect(await deployIds(site)).toEqual([first.body.id]);
  });

  it('the same key with another body is a 422, and nothing is created', async () => {
    const site = await hp.createSite('idem-other-body');
    const first = await create(site, manifest({ 'index.html': 'a' }), 'key-other');
    expect(first.status).toBe(200);
    for (const other of [
      manifest({ 'index.html': 'b' }),
      { ...manifest({ 'index.html': 'a' }), draft: true },
    ]) {
      const refused = await create(site, other, 'key-other');
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({ error: 'Idempotency key reused' });
      expect(refused.body.message).toMatch(/different request/);
    }
    expect(await deployIds(site)).toEqual([first.body.id]);
  });

  it('the body as the server reads it: key order and defaults spelled out do not make another request', async () => {
    const site = await hp.createSite('idem-canonical');
    const first = await create(site, { files: { 'a.html': sha256('a'), 'b.html': sha256('b') } }, 'key-c');
    const same = await create(
      site,
      { draft: false, base: 'none', files: { 'b.html': sha256('b'), 'a.html': sha256('a') } },
      'key-c',
    );
    expect(same).toMatchObject({ status: 200, replayed: 'true' });
    expect(same.body.id).toBe(first.body.id);
  });

  it('concurrent creates with one new key make one deploy; the others are its replay', async () => {
    const site = await hp.createSite('idem-race');
    const body = manifest({ 'index.html': 'raced', 'other.html': 'other' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => create(site, body, 'key-race')));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    const ids = new Set(answers.map((a) => a.body.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.replayed === null)).toHaveLength(1);
    expect(await deployIds(site)).toEqual([...ids]);
  });

  it('a key that is empty, too long or not visible ASCII is a 400; nothing is created', async () => {
    const site = await hp.createSite('idem-bad-key');
    const body = manifest({ 'index.html': 'x' });
    for (const key of ['', 'k'.repeat(256), 'clé', 'two words', 'tab\there']) {
      const res = await create(site, body, key);
      expect(res.status, key).toBe(400);
      expect(res.body).toMatchObject({ error: 'Bad Request' });
      expect(res.body.message).toMatch(/Idempotency-Key/);
    }
    expect((await create(site, body, 'k'.repeat(255))).status).toBe(200);
    expect((await create(site, body, '"!~quoted~!"')).status).toBe(200);
    expect(await deployIds(site)).toHaveLength(2);
  });

  it('once its deploy is cancelled, the key creates a new deploy', async () => {
    const site = await hp.createSite('idem-cancel');
    const body = manifest({ 'index.html': 'cancelled' });
    const first = await create(site, body, 'key-cancel');
    expect((await call(site, 'DELETE', `/api/v1/deploys/${first.body.id as string}`)).status).toBe(204);
    const second = await create(site, body, 'key-cancel');
    expect(second).toMatchObject({ status: 200, replayed: null });
    expect(second.body.id).not.toBe(first.body.id);
    // And then it is the new deploy's key: another body is refused.
    expect((await create(site, manifest({ 'index.html': 'other' }), 'key-cancel')).status).toBe(422);
    expect(await deployIds(site)).toEqual([second.body.id]);
  });

  it('keys are per site: one key on two sites makes two deploys', async () => {
    const one = await hp.createSite('idem-site-one');
    const two = await hp.createSite('idem-site-two');
    const body = manifest({ 'index.html': 'shared' });
    const a = await create(one, body, 'key-shared');
    const b = await create(two, body, 'key-shared');
    expect([a.status, b.status, a.replayed, b.replayed]).toEqual([200, 200, null, null]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await deployIds(one)).toEqual([a.body.id]);
    expect(await deployIds(two)).toEqual([b.body.id]);
  });

  it('the OpenAPI document has the header, the replay header and the 422', async () => {
    const doc = (await (await hp.request('/api/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    const create = doc.paths['/api/v1/deploys']!.post!;
    expect(create.parameters).toContainEqual(
      expect.objectContaining({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~]+$' },
      }),
    );
    const responses = create.responses as Record<string, { headers?: Record<string, unknown> }>;
    expect(Object.keys(responses['200']!.headers ?? {})).toEqual(['Idempotent-Replayed']);
    expect(responses['422']).toBeDefined();
  });

  it('without a key, each create is a new deploy (as before)', async () => {
    const site = await hp.createSite('idem-none');
    const body = manifest({ 'index.html': 'none' });
    const a = await create(site, body);
    const b = await create(site, body);
    expect(a.body.id).not.toBe(b.body.id);
    expect(b.replayed).toBeNull();
  });
});
