import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import type { Platform } from '../../src/platform/index.js';
import { TokenGrants } from '../../src/sqlite/grants.js';
import type { SqliteTokens, TokenGrant } from '../../src/sqlite/tokens.js';

// The grant cache's bookkeeping (pure logic): which entries a change drops, what is never kept.
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
