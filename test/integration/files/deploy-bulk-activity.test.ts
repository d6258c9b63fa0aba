import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployClient, sha256 } from '../../support/deploys-api.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';

const rowsOf = <R>(result: unknown) => (result as { rows: R[] }).rows;

describe('a bulk upload is deploy activity', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
  });
  afterAll(() => hp?.stop());

  it('a deploy receiving blobs by the bulk route is not swept as idle', async () => {
    const site = await hp.createSite('bulk-idle');
    const api = deployClient(hp.port, site.apiKey);
    const { id } = await api.create({ 'a.html': sha256('a'), 'b.html': sha256('b') });
    // the deploy was created 20 minutes ago (as a long upload would be)
    await hp.services.store.db.execute(
      sql`update deploys set last_activity_at = now() - interval '20 minutes' where id = ${id}`,
    );
    const res = await api.bulk(id, [[sha256('a'), 'a']]);
    expect(res.status).toBe(200);
    const [row] = rowsOf<{ age: number }>(
      await hp.services.store.db.execute(
        sql`select extract(epoch from now() - last_activity_at)::int as age from deploys where id = ${id}`,
      ),
    );
    console.log('age after bulk', row);
    await hp.services.deploys.sweepAbandoned();
    expect((await api.call('GET', `/api/v1/deploys/${id}`)).status).toBe(200);
  });
});
