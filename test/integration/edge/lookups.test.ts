import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// A URL the edge has not resolved yet may need up to three paths of the site (the path, its
// folder's index.html for a redirect, the site's 404.html): they are looked up in one query, each
// a primary-key lookup whatever the site's size.

describe.each(backends)('edge path lookups (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  const get = (path: string) => hp.request(path, { host: `${site.slug}.localhost:8080` });
  /** Queries of the file index made so far (each a `find_file` database operation). */
  const lookups = async () =>
    metricValue(await scrapeMetrics(hp), 'hostplane_db_operation_duration_seconds_count', {
      operation: 'find_file',
      outcome: 'ok',
    });
  const lookupsFor = async (path: string, status: number) => {
    const before = await lookups();
    const res = await get(path);
    expect(res.status, path).toBe(status);
    await res.arrayBuffer();
    return (await lookups()) - before;
  };

  const fewestLookups = async (path: string, status: number) => {
    let fewest = Infinity;
    for (let i = 0; i < 5 && fewest > 0; i++) fewest = Math.min(fewest, await lookupsFor(path, status));
    return fewest;
  };

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('lookups');
    await upload(hp, site, 'page.html', '<p>page</p>');
    await upload(hp, site, 'blog/index.html', '<p>blog</p>');
    await upload(hp, site, '404.html', '<p>lost</p>');
  });
  afterAll(() => hp?.stop());

  it('resolves a new URL with one query: a file, a redirect to a folder, a missing path', async () => {
    expect(await lookupsFor('/page.html', 200)).toBe(1);
    expect(await lookupsFor('/blog', 301)).toBe(1);
    expect(await lookupsFor('/nothing.html', 404)).toBe(1);
    // Answered from the caches: no query at all. With replicas possible (PostgreSQL) the caches
    // answer only while the sync loop is within its window, and a loaded machine can put it behind
    // for a moment (then the edge rightly reads the database): a few tries, one of them must be 0.
    expect(await fewestLookups('/page.html', 200)).toBe(0);
    expect(await fewestLookups('/nothing.html', 404)).toBe(0);
  });
});
