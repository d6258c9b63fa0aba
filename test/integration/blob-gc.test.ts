import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash, type BlobStore } from '../../src/blob/index.js';
import { backends, startHostplane, upload, type TestHostplane, type TestSite } from '../support/hostplane.js';

describe.each(backends)('orphan blob sweeping (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  const host = 'gc.localhost:8080';
  /** The blob key after whose write the sweeper runs once, and whether it removed that blob. */
  let sweepAfterPutOf: string | undefined;
  let sweptBetween = false;
  const sweepingBlobs = (real: BlobStore): BlobStore =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'put') return Reflect.get(target, prop, receiver);
        return async (key: string, body: Buffer) => {
          await target.put(key, body);
          if (key !== sweepAfterPutOf) return;
          sweepAfterPutOf = undefined;
          await hp.services.files.sweepOrphanBlobs(0);
          sweptBetween = (await target.head(key)) === undefined;
        };
      },
    });
  beforeAll(async () => {
    hp = await startHostplane(backend, { wrapBlobs: sweepingBlobs });
    site = await hp.createSite('gc');
  });
  afterAll(() => hp?.stop());

  const blobOf = async (path: string) => (await hp.services.files.find(site.siteId, path))?.blobKey;
  const del = (path: string) => hp.services.files.delete(site.siteId, path);

  it('deletes blobs no file references and keeps referenced ones', async () => {
    await upload(hp, site, 'keep.html', 'kept bytes');
    await upload(hp, site, 'drop.html', 'dropped bytes');
    const kept = (await blobOf('keep.html'))!;
    const dropped = (await blobOf('drop.html'))!;
    await del('drop.html');
    expect(await hp.services.files.sweepOrphanBlobs(0)).toBeGreaterThanOrEqual(1);
    expect(await hp.services.blobs.head(blobKeyForHash(dropped))).toBeUndefined();
    expect(await hp.services.blobs.head(blobKeyForHash(kept))).toBeDefined();
    expect(await (await hp.request('/keep.html', { host })).text()).toBe('kept bytes');
  });

  it('keeps blobs younger than the grace period', async () => {
    await upload(hp, site, 'young.html', 'young bytes');
    const young = (await blobOf('young.html'))!;
    await del('young.html');
    await hp.services.files.sweepOrphanBlobs(60 * 60 * 1000);
    expect(await hp.services.blobs.head(blobKeyForHash(young))).toBeDefined();
  });

  it('never leaves a file pointing at a swept blob when the same bytes are uploaded during a sweep', async () => {
    // Deterministic interleaving: the upload has written its blob and not yet recorded the file
    // when the sweeper runs and removes the (still unreferenced) blob. The commit must notice.
    const content = 're-deployed while sweeping';
    await upload(hp, site, 'race.html', content);
    const hash = (await blobOf('race.html'))!;
    await del('race.html');
    sweepAfterPutOf = blobKeyForHash(hash);
    await upload(hp, site, 'race.html', content);
    expect(sweptBetween, 'the sweeper removed the blob between its write and the commit').toBe(true);
    const res = await hp.request('/race.html', { host });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(content);
  });
});
