import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { sqliteApi } from '../../support/sqlite-api.js';

// PostgreSQL only: a second connection holds the pool's lock while an admin is being demoted.
describe('an admin demoted while resetting a user’s password', () => {
  const fixture = hostplaneWithFreshSites('postgres+s3', 'sq-admin-race');

  it('is refused once the demotion commits: the role is read again under the pool lock', async () => {
    const api = sqliteApi(fixture.hp, (await fixture.freshSite()).site);
    const token = await api.token();
    const admin = (await api.register(token, 'admin@example.com')).body.user as { id: number };
    const user = (await api.register(token, 'user@example.com')).body.user as { id: number };
    const session = await api.login(token, 'admin@example.com');
    const db = fixture.hp.services.store.db;
    let pending: ReturnType<typeof api.scoped> | undefined;
    let settled = false;
    await db.transaction(async (tx) => {
      // What a demotion by another admin does: the pool lock, then the role.
      const { rows } = (await tx.execute(
        sql`select database_id from sqlite_users where id = ${admin.id}`,
      )) as unknown as { rows: Array<{ database_id: number }> };
      await tx.execute(sql`select pg_advisory_xact_lock(4203, ${rows[0]!.database_id})`);
      await tx.execute(sql`update sqlite_users set role = 'user' where id = ${admin.id}`);
      pending = api
        .scoped(
          token,
          'POST',
          `/api/v1/sqlite/auth/users/${user.id}/reset-password`,
          { newPassword: 'a brand new password' },
          { 'x-sqlite-user-token': session },
        )
        .finally(() => (settled = true));
      for (;;) {
        const waiting = (await db.execute(
          sql`select count(*)::int as n from pg_stat_activity where wait_event = 'advisory'`,
        )) as unknown as { rows: Array<{ n: number }> };
        if (waiting.rows[0]!.n > 0 || settled) break;
        await new Promise((resolve) => setTimeout(resolve, 20)); // polls the condition above
      }
    });
    const answer = await pending!;
    expect(answer.status).toBe(403);
    expect(answer.body.message).toBe('Admin role required');
  });
});
