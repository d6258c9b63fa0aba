import type { Db, Executor } from '../store/index.js';
import { Accounts, type AccountMailer } from './accounts.js';
import { Domains, type DomainVerification, type TxtLookup } from './domains.js';
import { Keys } from './keys.js';
import { ServerSecrets } from './server-secrets.js';
import { Routing, type RoutingResult, type SiteRouting } from './routing.js';
import { Sites, type CreatedSite, type NewSite } from './sites.js';
import { SecondFactor } from './totp.js';
import type { PlanType } from './plans.js';
import type { Principal, Site, SiteUsage } from './types.js';
import { Usage, type UsageChange } from './usage.js';

/** What the account area needs beyond the database; every part has a default for other callers. */
export interface PlatformOptions {
  /** The API's base URL (the mailed links point at its console). */
  baseUrl?: string;
  /** Sends invitation, verification and reset mails (the composition root's outbox). */
  mailer?: AccountMailer | undefined;
  /** How custom domains are proven (default dns). */
  domainVerification?: DomainVerification;
  /** Names the platform itself answers on, never attachable as a custom domain. */
  isPlatformHost?: (hostname: string) => boolean;
  /** TXT lookups (tests inject one). */
  txtLookup?: TxtLookup;
}

/**
 * The platform domain's one service: accounts and sessions, API keys, sites and routing, plans
 * and usage. Each concern lives in its own module; this face keeps the calls other domains make.
 */
export class Platform {
  /** Inside the platform domain (the account routes); other domains use the methods below. */
  readonly accounts: Accounts;
  readonly keys: Keys;
  readonly sites: Sites;
  readonly domains: Domains;
  /** The TOTP second factor and the second step of a sign-in (the account routes). */
  readonly totp: SecondFactor;
  private readonly usage: Usage;
  private readonly routing: Routing;
  private readonly secrets: ServerSecrets;

  constructor(db: Db, options: PlatformOptions = {}) {
    this.accounts = new Accounts(db, {
      baseUrl: options.baseUrl ?? 'http://localhost:8080',
      mailer: options.mailer,
    });
    this.domains = new Domains(db, {
      verification: options.domainVerification ?? 'dns',
      reserved: options.isPlatformHost ?? (() => false),
      lookup: options.txtLookup,
    });
    this.keys = new Keys(db);
    this.sites = new Sites(db);
    this.usage = new Usage(db);
    this.routing = new Routing(db);
    this.secrets = new ServerSecrets(db);
    this.totp = new SecondFactor(db, () => this.secrets.get('account_totp'));
  }

  createSite(input: NewSite): Promise<CreatedSite> {
    return this.sites.create(input);
  }
  createSession(email: string): Promise<{ token: string; expiresAt: Date }> {
    return this.accounts.createSession(email);
  }
  authenticateKey(key: string): Promise<Principal | undefined> {
    return this.keys.authenticate(key);
  }
  authenticateSession(token: string, kind: 'bearer' | 'browser' = 'bearer'): Promise<Principal | undefined> {
    return this.accounts.sessions.authenticate(token, kind);
  }
  /** A temporary key of the site, bound to the session that mints it (it dies with that session). */
  createTempKey(
    siteId: number,
    expiresInSeconds: number,
    sessionId: number,
  ): Promise<{ key: string; expiresAt: Date }> {
    return this.keys.createTemporary(siteId, expiresInSeconds, sessionId);
  }
  siteOfAccount(accountId: number, siteId?: number): Promise<Site | undefined> {
    return this.sites.ofAccount(accountId, siteId);
  }
  getSite(siteId: number): Promise<Site | undefined> {
    return this.sites.get(siteId);
  }
  siteBySlug(slug: string): Promise<Site | undefined> {
    return this.sites.bySlug(slug);
  }
  siteByCustomDomain(hostname: string): Promise<Site | undefined> {
    return this.sites.byCustomDomain(hostname);
  }
  detachSite(siteId: number): Promise<void> {
    return this.sites.detach(siteId);
  }
  deleteSite(siteId: number): Promise<boolean> {
    return this.sites.delete(siteId);
  }
  getUsage(siteId: number): Promise<SiteUsage | undefined> {
    return this.usage.get(siteId);
  }
  lockUsage(tx: Executor, siteId: number): Promise<SiteUsage> {
    return this.usage.lock(tx, siteId);
  }
  recordChange(tx: Executor, siteId: number, change: UsageChange): Promise<void> {
    return this.usage.recordChange(tx, siteId, change);
  }
  claimCounterChecks(limit: number): Promise<number[]> {
    return this.usage.claimCounterChecks(limit);
  }
  listSiteRouting(): Promise<SiteRouting[]> {
    return this.routing.listSiteRouting();
  }
  siteRouting(siteId: number): Promise<SiteRouting | undefined> {
    return this.routing.siteRouting(siteId);
  }
  siteRoutingBySlug(slug: string): Promise<SiteRouting | undefined> {
    return this.routing.siteRoutingBySlug(slug);
  }
  siteRoutingOfResource(resourceUid: string): Promise<SiteRouting | undefined> {
    return this.routing.siteRoutingOfResource(resourceUid);
  }
  claimSite(
    siteId: number,
    resourceUid: string,
    isLiveResource: (uid: string) => boolean,
  ): Promise<'claimed' | 'claimed_elsewhere' | 'missing'> {
    return this.routing.claimSite(siteId, resourceUid, isLiveResource);
  }
  applyRouting(siteId: number, slug: string, wanted: readonly string[]): Promise<RoutingResult> {
    return this.routing.applyRouting(siteId, slug, wanted);
  }
  accountContact(
    accountId: number,
  ): Promise<{ email: string; plan: PlanType; verified: boolean } | undefined> {
    return this.accounts.contact(accountId);
  }
  accountHosts(accountId: number, sitesDomain: string): Promise<string[]> {
    return this.routing.accountHosts(accountId, sitesDomain);
  }
  /** A secret shared by every replica, generated on first use (see ServerSecrets). */
  serverSecret(name: string): Promise<Buffer> {
    return this.secrets.get(name);
  }
  /** Deletes expired temporary keys and account sessions; returns how many rows went. */
  async sweepExpiredCredentials(): Promise<number> {
    return (
      (await this.keys.sweepExpired()) +
      (await this.accounts.sweepExpired()) +
      (await this.totp.sweepExpired())
    );
  }
}
