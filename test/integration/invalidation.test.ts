import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { siteFiles } from '../../src/store/schema.js';
import { startHostplane, upload, type TestHostplane, type TestSite } from '../support/hostplane.js';

// Cross-process invalidation: another process's write reaches this edge only through NOTIFY.
describe('edge invalidation by Postgres NOTIFY', () => {
  let hp: TestHostplane;
  let site: TestSite;
  const host = 'notified.localhost:8080';

  beforeAll(async () => {
    hp = await startHostplane('postgres+s3');
    site = await hp.createSite('notified');
    await upload(hp, site, 'a.html', 'one');
    await upload(hp, site, 'b.html', 'two');
    await upload(hp, site, 'c.html', 'three');
  });
  afterAll(() => hp?.stop());

  /** Points a.html at another file's bytes the way another process would: a row change plus NOTIFY. */
  async function repointElsewhere(sourcePath: string): Promise<void> {
    const { db } = hp.services.store;
    const [source] = await db
      .select()
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, site.siteId), eq(siteFiles.path, sourcePath)));
    await db
      .update(siteFiles)
      .set({ blobKey: source!.blobKey, size: source!.size })
      .where(and(eq(siteFiles.siteId, site.siteId), eq(siteFiles.path, 'a.html')));
    await db.execute(sql`select pg_notify('hostplane_site_changed', ${String(site.siteId)})`);
  }

  async function pageEventually(expected: string): Promise<string> {
    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await (await hp.request('/a.html', { host })).text();
      if (text === expected) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return text;
  }

  it('drops a cached page when a NOTIFY for its site arrives', async () => {
    expect(await (await hp.request('/a.html', { host })).text()).toBe('one');
    await repointElsewhere('b.html');
    expect(await pageEventually('two')).toBe('two');
  });

  it('survives the loss of its LISTEN connection and subscribes again', async () => {
    const { db } = hp.services.store;
    const killed = await db.execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%'`,
    );
    expect((killed as unknown as { rowCount: number }).rowCount).toBeGreaterThan(0);
    // Still serving, and invalidation works again once the new subscription is in place.
    expect((await hp.request('/readyz')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1000));
    await repointElsewhere('c.html');
    expect(await pageEventually('three')).toBe('three');
  });
});
