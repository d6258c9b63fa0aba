import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash, type BlobStore } from '../../../src/blob/index.js';
import { deployClient, sha256 } from '../../support/deploys-api.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';

/**
 * Counts the blob store's writes of the keys in `watched`; the `failAt`-th of them fails. The ones
 * started before it are held until it fails, so they are all in flight when it does (no timing).
 */
function failingWrites(failAt: number) {
  const state = { watched: new Set<string>(), started: 0, active: 0 };
  const held: (() => void)[] = [];
  const wrap = (real: BlobStore): BlobStore =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'put') return Reflect.get(target, prop, receiver);
        return async (key: string, body: Buffer) => {
          if (!state.watched.has(key)) return target.put(key, body);
          const n = ++state.started;
          state.active++;
          try {
            if (n === failAt) {
              for (const release of held.splice(0)) release();
              throw new Error('disk full (test)');
            }
            if (n < failAt) await new Promise<void>((resolve) => held.push(resolve));
            await target.put(key, body);
          } finally {
            state.active--;
          }
        };
      },
    });
  return { wrap, state };
}

describe('a bulk upload whose blob write fails', () => {
  let hp: TestHostplane;
  const failing = failingWrites(3);
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { wrapBlobs: failing.wrap });
  });
  afterAll(() => hp?.stop());

  it('answers the error and starts no further writes; the ones under way end before the answer', async () => {
    const site = await hp.createSite('bulk-fail');
    const api = deployClient(hp.port, site.apiKey);
    const contents = Array.from({ length: 100 }, (_, i) => `<p>page ${i}</p>`);
    const { id, required } = await api.create(
      Object.fromEntries(contents.map((c, i) => [`p/${i}.html`, sha256(c)])),
    );
    expect(required).toHaveLength(100);
    for (const c of contents) failing.state.watched.add(blobKeyForHash(sha256(c)));

    const res = await api.bulk(
      id,
      contents.map((c) => [sha256(c), c]),
    );
    expect(res.status).toBe(500);
    // The writes started together (16 at once) before the third failed; none after it.
    expect(failing.state.started).toBeGreaterThanOrEqual(3);
    expect(failing.state.started).toBeLessThanOrEqual(16);
    expect(failing.state.active).toBe(0);
    // Nothing was recorded: the deploy still lacks every blob.
    const got = await api.call('GET', `/api/v1/deploys/${id}`);
    expect(got.body.deploy).toMatchObject({ state: 'uploading' });
    expect((got.body.files as Array<{ size: number | null }>).every((f) => f.size === null)).toBe(true);
  });
});
