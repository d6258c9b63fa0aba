import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash } from '../../../src/blob/index.js';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

/**
 * Large upload bodies (≥ 1 MB) are read into one buffer and `content` is decoded from it directly
 * (src/files/upload-body.ts). Whatever the body, the answer and the stored bytes must be what the
 * ordinary JSON parser gives.
 */
describe.each(backends)('large upload bodies (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('bodies');
  });
  afterAll(() => hp?.stop());

  const send = (body: string | Buffer, contentType = 'application/json') =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { ...apiKeyHeader(site), 'content-type': contentType },
      // The test client sends strings and Buffers as they are; fetch's BodyInit type is narrower.
      body: body as BodyInit,
    });
  const stored = async (path: string) => {
    const row = await hp.services.files.find(site.siteId, path);
    return row?.blobKey ? hp.services.blobs.getBuffer(blobKeyForHash(row.blobKey)) : undefined;
  };
  const sha = (bytes: Buffer | undefined) => bytes && createHash('sha256').update(bytes).digest('hex');
  const bytes = randomBytes(3 * 1024 * 1024 + 1); // padding "==" at the end
  const base64 = bytes.toString('base64');

  it('stores base64 content exactly, whatever the order of the fields', async () => {
    const first = await send(JSON.stringify({ path: 'a.png', content: base64, encoding: 'base64' }));
    expect(first.status).toBe(200);
    expect(sha(await stored('a.png'))).toBe(sha(bytes));
    const last = await send(`{"content" : "${base64}",\n "encoding":"base64", "path":"b.png"}  `);
    expect(last.status).toBe(200);
    expect(sha(await stored('b.png'))).toBe(sha(bytes));
  });

  it('stores UTF-8 text exactly, with and without escapes', async () => {
    const text = 'héllo wörld ✓ '.repeat(100_000);
    expect((await send(JSON.stringify({ path: 'plain.txt', content: text }))).status).toBe(200);
    expect((await stored('plain.txt'))?.toString('utf8')).toBe(text);
    const escaped = `<p>"quoted"\n\ttabbed \\ ${'x'.repeat(2_000_000)}</p>`;
    expect((await send(JSON.stringify({ path: 'escaped.html', content: escaped }))).status).toBe(200);
    expect((await stored('escaped.html'))?.toString('utf8')).toBe(escaped);
  });

  it('decodes base64 with whitespace as before, and refuses invalid base64 with 400', async () => {
    const spaced = base64.replace(/(.{76})/g, '$1 ');
    expect(
      (await send(JSON.stringify({ path: 'spaced.png', content: spaced, encoding: 'base64' }))).status,
    ).toBe(200);
    expect(sha(await stored('spaced.png'))).toBe(sha(bytes));
    const broken = `${base64.slice(0, 1_500_000)}!${base64.slice(1_500_001)}`;
    const refused = await send(JSON.stringify({ path: 'broken.png', content: broken, encoding: 'base64' }));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'Invalid content' });
    const unpadded = await send(
      JSON.stringify({ path: 'unpadded.png', content: base64.slice(0, -2), encoding: 'base64' }),
    );
    expect(unpadded.status).toBe(400);
    expect(await stored('broken.png')).toBeUndefined();
  });

  it('answers malformed, non-UTF-8 and ambiguous bodies as the JSON parser does', async () => {
    const big = 'x'.repeat(2_000_000);
    const trailing = await send(`{"path":"t.txt","content":"${big}"} trailing`);
    expect(trailing.status).toBe(400);
    expect(await trailing.json()).toMatchObject({ message: 'The request body is not valid JSON.' });
    const control = await send(`{"path":"c.txt","content":"${big}\u0001"}`);
    expect(control.status).toBe(400);
    const latin1 = Buffer.concat([
      Buffer.from(`{"path":"l.txt","content":"${big}`),
      Buffer.from([0xe9, 0x22, 0x7d]),
    ]);
    const notUtf8 = await send(latin1);
    expect(notUtf8.status).toBe(400);
    expect(await notUtf8.json()).toMatchObject({ message: 'The request body is not valid UTF-8.' });
    expect(
      (await send(`{"path":"s.txt","content":"${big}"}`, 'application/json; charset=latin1')).status,
    ).toBe(415);
    // JSON.parse keeps the last of two keys that spell "content" (one escaped): so does the upload.
    const twice = await send(`{"path":"twice.txt","content":"${big}","cont\\u0065nt":""}`);
    expect(twice.status).toBe(200);
    expect((await stored('twice.txt'))?.length).toBe(0);
    // A byte order mark is dropped, as the JSON parser does.
    const bom = await send(
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"path":"bom.txt","content":"${big}"}`)]),
    );
    expect(bom.status).toBe(200);
    expect((await stored('bom.txt'))?.length).toBe(big.length);
    for (const path of ['t.txt', 'c.txt', 'l.txt', 's.txt']) expect(await stored(path)).toBeUndefined();
  });

  it('refuses a large body nested deeper than 64 levels with 400, as the small ones (issue 16)', async () => {
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    for (const body of [
      `{"path":"deep.txt","content":"${'x'.repeat(2_000_000)}","x":${deep}}`,
      `{"path":"deep.txt","content":"x","x":${deep}}`,
    ]) {
      const res = await send(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: 'Bad Request',
        message: 'The request body nests objects and arrays more than 64 levels deep.',
      });
    }
    expect(await stored('deep.txt')).toBeUndefined();
  });
});
