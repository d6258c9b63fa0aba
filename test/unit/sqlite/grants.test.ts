import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import type { Platform } from '../../../src/platform/index.js';
import { TokenGrants } from '../../../src/sqlite/grants.js';
import { SessionCache } from '../../../src/sqlite/sessions.js';
import type { SqliteTokens, TokenGrant } from '../../../src/sqlite/tokens.js';
import type { SignedIn, UserPools } from '../../../src/sqlite/users.js';

// The grant and session caches' bookkeeping (pure logic): which entries a change drops, what is never kept.
// The real invalidation across replicas (NOTIFY) is tested in integration/sqlite/grants.test.ts.

function harness() {
  const reads: string[] = [];
  const touched: number[] = [];
  const known = new Map<string, { siteId: number; revoked?: boolean }>();
  let pending: Array<() => void> | undefined;
  const tokens = {
    async authenticate(token: string): Promise<TokenGrant> {
      reads.push(token);
      if (pending) await new Promise<void>((resolve) => pending!.push(resolve));
      const found = known.get(token);
      if (!found || found.revoked) throw new Error('SQLITE_TOKEN_INVALID');
      return {
        token: { id: reads.length, revokedAt: null, expiresAt: null } as TokenGrant['token'],
        database: { id: 1, siteId: found.siteId, accountId: 1 } as TokenGrant['database'],
      };
    },
    async touch(id: number) {
      touched.push(id);
    },
  } as unknown as SqliteTokens;
  const platform = {
    siteRouting: async () => ({ slug: 'site', detached: false, customDomains: [] }),
    accountContact: async () => ({ email: 'a@example.com', plan: 'free' }),
  } as unknown as Platform;
  const grants = new TokenGrants({
    config: { baseUrl: 'http://localhost:8080', sitesDomain: 'localhost' },
    platform,
    tokens,
    logger: createLogger('silent'),
  });
  return {
    grants,
    reads,
    touched,
    known,
    /** Holds every token read until the returned function is called. */
    hold() {
      pending = [];
      return () => {
        const waiting = pending ?? [];
        pending = undefined;
        waiting.forEach((resolve) => resolve());
      };
    },
  };
}

const token = (n: number) => `hp_sqlite_token_number_${n}`;

describe('TokenGrants', () => {
  it('reads a token once, then answers from memory with its origins and plan', async () => {
    const h = harness();
    h.known.set(token(1), { siteId: 7 });
    const first = await h.grants.resolve(token(1));
    const again = await h.grants.resolve(token(1));
    expect(again).toBe(first);
    expect(first.origins).toEqual(['http://site.localhost:8080']);
    expect(first.plan.type).toBe('free');
    expect(h.reads).toEqual([token(1)]);
  });

  it('drops the changed site’s grants only; a change anywhere drops grants still loading', async () => {
    const h = harness();
    h.known.set(token(1), { siteId: 7 });
    h.known.set(token(2), { siteId: 8 });
    h.known.set(token(3), { siteId: 9 });
    await h.grants.resolve(token(1));
    await h.grants.resolve(token(2));
    const release = h.hold();
    const loading = h.grants.resolve(token(3));
    h.grants.forgetSite(7);
    release();
    await loading;
    await h.grants.resolve(token(1));
    await h.grants.resolve(token(2));
    await h.grants.resolve(token(3));
    // token 1 re-read (its site changed), token 2 not, token 3 (loading during the change) re-read.
    expect(h.reads).toEqual([token(1), token(2), token(3), token(1), token(3)]);
    h.known.set(token(2), { siteId: 8, revoked: true });
    h.grants.forgetSite(8);
    await expect(h.grants.resolve(token(2))).rejects.toThrow();
  });

  it('keeps no unknown token, and refuses short or long ones without a read', async () => {
    const h = harness();
    await expect(h.grants.resolve(token(9))).rejects.toThrow();
    await expect(h.grants.resolve(token(9))).rejects.toThrow();
    expect(h.reads).toEqual([token(9), token(9)]);
    await expect(h.grants.resolve('short')).rejects.toMatchObject({ code: 'SQLITE_TOKEN_INVALID' });
    await expect(h.grants.resolve(undefined)).rejects.toMatchObject({ code: 'SQLITE_TOKEN_INVALID' });
    await expect(h.grants.resolve('x'.repeat(201))).rejects.toMatchObject({ code: 'SQLITE_TOKEN_INVALID' });
    expect(h.reads).toHaveLength(2);
  });

  it('forgets everything on forgetAll (a reconnect, a routing change)', async () => {
    const h = harness();
    h.known.set(token(1), { siteId: 7 });
    await h.grants.resolve(token(1));
    h.grants.forgetAll();
    await h.grants.resolve(token(1));
    expect(h.reads).toEqual([token(1), token(1)]);
  });
});

describe('SessionCache', () => {
  const session = (n: number) => n.toString(16).padStart(64, '0');
  function sessions() {
    const reads: string[] = [];
    let hold: Promise<void> | undefined;
    let expiresInDays = 30;
    const users = {
      async authenticate(_db: unknown, token: string): Promise<SignedIn> {
        reads.push(token);
        await hold;
        return {
          user: { id: 1, role: 'user' } as SignedIn['user'],
          sessionId: 1,
          expiresAt: new Date(Date.now() + expiresInDays * 86_400_000),
        };
      },
    } as unknown as UserPools;
    return {
      cache: new SessionCache(users),
      reads,
      setHold: (p: Promise<void> | undefined) => (hold = p),
      setExpiresInDays: (days: number) => (expiresInDays = days),
    };
  }
  const db = (id: number) => ({ id }) as Parameters<SessionCache['authenticate']>[0];

  it('reads a session once per database, drops a database’s sessions on a change, keeps no read that a change overtook', async () => {
    const s = sessions();
    await s.cache.authenticate(db(1), session(1));
    await s.cache.authenticate(db(1), session(1));
    await s.cache.authenticate(db(2), session(2));
    expect(s.reads).toEqual([session(1), session(2)]);
    // Another database's session id is not this one's.
    await s.cache.authenticate(db(2), session(1));
    expect(s.reads).toHaveLength(3);
    s.cache.forgetDatabase(1);
    await s.cache.authenticate(db(2), session(2));
    expect(s.reads).toHaveLength(3); // database 2 kept
    let release!: () => void;
    s.setHold(new Promise<void>((resolve) => (release = resolve)));
    const reading = s.cache.authenticate(db(3), session(3));
    s.cache.forgetDatabase(9); // any change while the read is under way
    release();
    await reading;
    s.setHold(undefined);
    await s.cache.authenticate(db(3), session(3));
    expect(s.reads.filter((t) => t === session(3))).toHaveLength(2);
  });

  it('reads PostgreSQL again for a session near its refresh, and refuses a malformed one without a read', async () => {
    const s = sessions();
    s.setExpiresInDays(3);
    await s.cache.authenticate(db(1), session(1));
    await s.cache.authenticate(db(1), session(1));
    expect(s.reads).toHaveLength(2);
    await expect(s.cache.authenticate(db(1), 'not-a-session')).rejects.toMatchObject({
      code: 'SQLITE_SESSION_INVALID',
    });
    expect(s.reads).toHaveLength(2);
  });
});
