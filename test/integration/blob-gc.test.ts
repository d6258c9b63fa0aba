import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash } from '../../src/blob/index.js';
import { backends, startHostplane, upload, type TestHostplane, type TestSite } from '../support/hostplane.js';

describe.each(backends)('orphan blob sweeping (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  const host = 'gc.localhost:8080';
  beforeAll(async () => {
    hp = await startHostplane(backend);
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
    for (let round = 0; round < 15; round++) {
      const content = `re-deployed ${round}`;
      await upload(hp, site, 'race.html', content);
      await del('race.html');
      // The blob is now unreferenced; the same bytes come back while the sweeper runs.
      await Promise.all([upload(hp, site, 'race.html', content), hp.services.files.sweepOrphanBlobs(0)]);
      const res = await hp.request('/race.html', { host });
      expect(res.status, `round ${round}`).toBe(200);
      expect(await res.text()).toBe(content);
      await del('race.html');
    }
  });
});
