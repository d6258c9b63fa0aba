import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { and, asc, eq, inArray } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { notifySiteEvent } from './site-events.js';
import { customDomains, domainClaims, sites } from './tables.js';

/** How a custom domain's ownership is proven: a DNS TXT record, or not at all (local use). */
export type DomainVerification = 'dns' | 'off';

export interface DomainState {
  hostname: string;
  status: 'active' | 'pending';
  /** Pending: the TXT record that proves ownership. */
  verification?: { type: 'TXT'; name: string; value: string };
}

/** Reads the TXT records of a name; answers [] when there are none. */
export type TxtLookup = (name: string) => Promise<string[]>;

/**
 * A DNS name of two labels or more, ending in a label that starts with a letter: the documented
 * pattern. Its length (at most 253, a final dot aside) is checked apart, as the schema's maxLength:
 * a lookahead in the pattern leaves the fuzzer's generator filtering strings at random until its
 * health check gives up.
 */
export const HOSTNAME_PATTERN =
  '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.?$';
const HOSTNAME = new RegExp(`^(?=.{1,253}\\.?$)${HOSTNAME_PATTERN.slice(1)}`);

export const recordName = (hostname: string) => `_hostplane.${hostname}`;
const recordValue = (token: string) => `hostplane-verify=${token}`;

/** The system resolver, bounded: a lookup answers within a few seconds, missing records as none. */
export const systemTxtLookup: TxtLookup = async (name) => {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch {
    return [];
  }
};

/**
 * Cluster mode: the site's Site resource, whose spec.customDomains the controller mirrors into
 * the database (deleting any domain it does not list). Each call edits that one hostname in the
 * resource's own current list, conditional on its resourceVersion (retried on a concurrent
 * write), so two calls at once never undo each other. A site without a resource: both no-ops.
 */
export interface DomainSpec {
  /** Adds `hostname`; true when this call added it (it was not listed). */
  add(hostname: string): Promise<boolean>;
  remove(hostname: string): Promise<void>;
}

/**
 * Custom domains an owner attaches from the account API. With `dns` a domain waits as a claim
 * until `_hostplane.<domain>` has a TXT record with the claim's token; with `off` it is attached
 * at once. `reserved` says whether a name is the platform's own (the API host, the sites domain).
 */
export class Domains {
  constructor(
    private readonly db: Db,
    private readonly options: {
      verification: DomainVerification;
      reserved: (hostname: string) => boolean;
      lookup?: TxtLookup;
    },
  ) {}

  normalize(input: string): string {
    const hostname = input.trim().toLowerCase().replace(/\.$/, '');
    if (!HOSTNAME.test(hostname) || hostname.length > 253)
      throw new AppError('INVALID_REQUEST', {
        message: 'hostname must be a DNS name such as www.example.com',
      });
    if (this.options.reserved(hostname))
      throw new AppError('INVALID_REQUEST', {
        message: `${hostname} is one of this platform's own names: attach a domain of your own`,
      });
    return hostname;
  }

  async list(siteId: number): Promise<DomainState[]> {
    const [active, pending] = await Promise.all([
      this.db
        .select()
        .from(customDomains)
        .where(eq(customDomains.siteId, siteId))
        .orderBy(asc(customDomains.hostname)),
      this.db
        .select()
        .from(domainClaims)
        .where(eq(domainClaims.siteId, siteId))
        .orderBy(asc(domainClaims.hostname)),
    ]);
    return [
      ...active.map((d): DomainState => ({ hostname: d.hostname, status: 'active' })),
      ...pending
        .filter((c) => !active.some((d) => d.hostname === c.hostname))
        .map((c): DomainState => this.pending(c.hostname, c.token)),
    ];
  }

  /**
   * Asks for `hostname` on the site: attached at once without verification, else a pending claim.
   * `spec`: the site's Site resource (cluster mode), which an attach writes first.
   */
  async request(siteId: number, input: string, spec?: DomainSpec): Promise<DomainState> {
    const hostname = this.normalize(input);
    await this.refuseTaken(siteId, hostname);
    if (this.options.verification === 'off') return this.attach(siteId, hostname, spec);
    const token = randomBytes(16).toString('hex');
    const [claim] = await this.db
      .insert(domainClaims)
      .values({ siteId, hostname, token })
      .onConflictDoUpdate({ target: [domainClaims.siteId, domainClaims.hostname], set: { siteId } })
      .returning();
    return this.pending(hostname, claim!.token);
  }

  /** Attaches a pending domain once its TXT record is found. */
  async verify(siteId: number, input: string, spec?: DomainSpec): Promise<DomainState> {
    const hostname = this.normalize(input);
    const [claim] = await this.db
      .select()
      .from(domainClaims)
      .where(and(eq(domainClaims.siteId, siteId), eq(domainClaims.hostname, hostname)));
    if (!claim) {
      const attached = (await this.list(siteId)).find((d) => d.hostname === hostname);
      if (attached) return attached;
      throw new AppError('NOT_FOUND', { message: `The site has no domain ${hostname}.` });
    }
    const values = await (this.options.lookup ?? systemTxtLookup)(recordName(hostname));
    if (!values.includes(recordValue(claim.token)))
      throw new AppError('DOMAIN_NOT_VERIFIED', {
        hostname,
        record: recordName(hostname),
        value: recordValue(claim.token),
      });
    return this.attach(siteId, hostname, spec);
  }

  /**
   * Detaches a domain (or drops its claim); false when the site has neither. With `spec` the
   * domain leaves the Site resource first (see attach): a controller pass in between deletes it
   * from the database too, which is what the owner asked for.
   */
  async detach(siteId: number, input: string, spec?: DomainSpec): Promise<boolean> {
    const hostname = input.trim().toLowerCase().replace(/\.$/, '');
    let wasAttached = false;
    if (spec) {
      const [attached] = await this.db
        .select({ hostname: customDomains.hostname })
        .from(customDomains)
        .where(and(eq(customDomains.siteId, siteId), eq(customDomains.hostname, hostname)));
      wasAttached = attached !== undefined;
      if (wasAttached) await spec.remove(hostname);
    }
    const detached = await dbOp('detach_domain', () =>
      this.db.transaction(async (tx) => {
        const claims = await tx
          .delete(domainClaims)
          .where(and(eq(domainClaims.siteId, siteId), eq(domainClaims.hostname, hostname)))
          .returning();
        const routed = await tx
          .delete(customDomains)
          .where(and(eq(customDomains.siteId, siteId), eq(customDomains.hostname, hostname)))
          .returning();
        if (routed.length > 0) await tx.execute(notifySiteEvent({ kind: 'routes' }));
        return claims.length + routed.length > 0;
      }),
    );
    return detached || wasAttached;
  }

  /** The site's attached hostnames. */
  async hostnames(siteId: number): Promise<string[]> {
    const rows = await this.db
      .select({ hostname: customDomains.hostname })
      .from(customDomains)
      .where(eq(customDomains.siteId, siteId));
    return rows.map((r) => r.hostname);
  }

  /** The attached hostnames of each of `siteIds`, in one query (the account's site list). */
  async hostnamesOfSites(siteIds: number[]): Promise<Map<number, string[]>> {
    const bySite = new Map<number, string[]>();
    if (siteIds.length === 0) return bySite;
    const rows = await this.db
      .select({ siteId: customDomains.siteId, hostname: customDomains.hostname })
      .from(customDomains)
      .where(inArray(customDomains.siteId, siteIds));
    for (const row of rows) bySite.set(row.siteId, [...(bySite.get(row.siteId) ?? []), row.hostname]);
    return bySite;
  }

  private async refuseTaken(siteId: number, hostname: string): Promise<void> {
    const [holder] = await this.db.select().from(customDomains).where(eq(customDomains.hostname, hostname));
    if (holder && holder.siteId !== siteId) throw new AppError('DOMAIN_TAKEN', { hostname });
  }

  /**
   * With `spec` (cluster mode) the Site resource is written before the database, never after: the
   * controller mirrors the spec into the database, so a pass that ran between a database insert
   * and the spec write would delete the domain the owner is about to be told is attached. Spec
   * first, a pass in between only inserts it early (the insert here then finds it). Should the
   * database then refuse it (another site took it meanwhile), it leaves the spec again.
   */
  private async attach(siteId: number, hostname: string, spec?: DomainSpec): Promise<DomainState> {
    const added = spec ? await spec.add(hostname) : false;
    try {
      return await this.attachRow(siteId, hostname);
    } catch (err) {
      // Best effort: a domain left listed is one the controller reports as taken, never routed.
      if (added) await spec?.remove(hostname).catch(() => undefined);
      throw err;
    }
  }

  private async attachRow(siteId: number, hostname: string): Promise<DomainState> {
    return dbOp('attach_domain', () =>
      this.db.transaction(async (tx) => {
        // The site row first, as the controller's applyRouting takes it (FOR UPDATE) before it
        // inserts the spec's domains: the insert's foreign-key check would take it after the
        // hostname's index entry, and the two transactions would deadlock on the same hostname.
        await tx.select({ id: sites.id }).from(sites).where(eq(sites.id, siteId)).for('key share');
        await tx.insert(customDomains).values({ hostname, siteId }).onConflictDoNothing();
        const [holder] = await tx.select().from(customDomains).where(eq(customDomains.hostname, hostname));
        if (holder?.siteId !== siteId) throw new AppError('DOMAIN_TAKEN', { hostname });
        await tx
          .delete(domainClaims)
          .where(and(eq(domainClaims.siteId, siteId), eq(domainClaims.hostname, hostname)));
        await tx.execute(notifySiteEvent({ kind: 'routes' }));
        return { hostname, status: 'active' };
      }),
    );
  }

  private pending(hostname: string, token: string): DomainState {
    return {
      hostname,
      status: 'pending',
      verification: { type: 'TXT', name: recordName(hostname), value: recordValue(token) },
    };
  }
}
