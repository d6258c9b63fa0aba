import type { RateLimiter } from '../ratelimit/index.js';
import type { Plan, PlanType } from './plans.js';
import type { DomainSpec } from './domains.js';

/** The usage the platform does not keep itself: forms, submissions and SQLite (their domains count). */
export interface ExtraUsage {
  forms: number;
  submissionsThisMonth: number;
  submissionsResetAt: Date;
  sqliteDatabases: number;
  largestSqliteBytes: number;
  largestSqliteUsers: number;
}

/** Sign-in's budgets (sign-in-attempts.ts), counted across replicas. */
export interface SignInLimiters {
  /** Failed sign-ins per email, shared by every client without a trusted device cookie. */
  perEmail: RateLimiter[];
  /** Failed sign-ins per device cookie. */
  perDevice: RateLimiter[];
}

/**
 * What the account API needs from the other domains and the cluster, provided by the composition
 * root (src/server/), so that the platform imports none of them.
 */
export interface AccountHooks {
  signup: 'invite' | 'open';
  /** Whether this server sends mail (SMTP_URL is set): links and notifications are mailed only then. */
  mail: boolean;
  /** Where the plans page sends an owner who wants more room (HOSTPLANE_PLANS_CONTACT): a URL or mailto:. */
  plansContact: string | undefined;
  /** Sites an account can create from the account API (HOSTPLANE_MAX_SITES_PER_ACCOUNT). */
  maxSitesPerAccount: number;
  /** The console page that shows the plans: quota errors and GET /api/v1/account point at it. */
  upgradeUrl: string;
  /** Sign-in, sign-up and reset attempts: per client address and per email, counted across replicas. */
  /** perEmail: sign-up, reset and verification requests (each mails the address), password changes. */
  /** signIn: failed sign-ins per email and per device cookie (sign-in-attempts.ts). */
  /** secondFactor: TOTP codes per account (sign-in's second step, setup, disable). */
  limiters: {
    perAddress: RateLimiter[];
    perEmail: RateLimiter[];
    signIn: SignInLimiters;
    secondFactor: RateLimiter[];
  };
  usage(accountId: number): Promise<ExtraUsage>;
  /** Published deploys and finalized drafts kept per site, by plan (the files domain's rule). */
  deployRetention(plan: PlanType): { deploys: number; drafts: number };
  /** Bytes the deploys kept for rollback hold of their own, per site (absent: none), and their bound. */
  rollback: {
    bytes(siteIds: number[]): Promise<Map<number, number>>;
    limit(plan: Plan): number | null;
  };
  /** After a site is committed (cluster mode: its Site resource); what it returns is logged. */
  siteCreated?(site: { siteId: number; slug: string }): Promise<unknown>;
  /** Deletes the site with its files, forms and SQLite databases (cluster mode: through its resource). */
  deleteSite(siteId: number): Promise<void>;
  /** Cluster mode: the site's Site resource, which holds its custom domains (written before the database). */
  domainSpec?(siteId: number): DomainSpec;
  forms: {
    /** The form's notification address (null: the account's), undefined when the site has no such form. */
    notification(siteId: number, formId: number): Promise<FormNotification | undefined>;
    setNotification(siteId: number, formId: number, email: string | null): Promise<FormNotification>;
  };
}

/** A form's notification address and whether it is confirmed (the forms domain decides). */
export interface FormNotification {
  email: string | null;
  status: 'confirmed' | 'pending';
  /** The state in words. */
  message: string;
}
