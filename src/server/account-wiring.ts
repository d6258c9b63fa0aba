// The account API's glue (src/platform's AccountHooks): mails through the outbox, usage counted
// by the forms and SQLite domains, site deletion through every domain's own path, and in the
// cluster the Site resource as the one place a site's deletion and custom domains go through.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config/index.js';
import { isAppError } from '../errors/index.js';
import { DEPLOY_RETENTION, DRAFT_RETENTION, rollbackLimit, type DeploysService } from '../files/index.js';
import {
  addressMessage,
  type FormsService,
  type NotificationAddresses,
  type Submissions,
} from '../forms/index.js';
import type { SiteResources } from '../kube/index.js';
import { composeAccountMail, enqueue, messageIdFor } from '../mail/index.js';
import type { Logger } from '../observability/index.js';
import type { AccountHooks, AccountMailer, Platform, PlatformOptions } from '../platform/index.js';
import type { SqliteDatabases } from '../sqlite/index.js';
import type { SiteCreatedHook } from './admin-socket.js';

/** Sign-in, sign-up and reset attempts (per client address, per email, per device cookie): across replicas. */
export const ACCOUNT_RATE_LIMITS = {
  perAddress: [
    { name: 'account_auth_ip_minute', points: 20, durationSeconds: 60 },
    { name: 'account_auth_ip_hour', points: 200, durationSeconds: 3600 },
  ],
  // Sign-up, reset and verification requests (each one mails the address), password changes.
  perEmail: [{ name: 'account_auth_email', points: 10, durationSeconds: 15 * 60 }],
  // Failed sign-ins only (a success gives its point back), per email and per device cookie: a
  // guesser spends the email's budget, the owner's known browsers keep their own.
  signInPerEmail: [{ name: 'account_signin_email', points: 10, durationSeconds: 15 * 60 }],
  signInPerDevice: [{ name: 'account_signin_device', points: 5, durationSeconds: 15 * 60 }],
  // A 6-digit code has a million values: 10 guesses per 15 minutes per account, on every replica.
  secondFactor: [{ name: 'account_2fa', points: 10, durationSeconds: 15 * 60 }],
} as const;

/** Account mails go to the outbox when SMTP is configured; without it, links are only printed by the CLI. */
export function accountMailer(config: Config): AccountMailer | undefined {
  if (!config.mail.smtpUrl) return undefined;
  const domain = new URL(config.baseUrl).hostname;
  return async (tx, mail) => {
    const composed = composeAccountMail({
      ...mail,
      messageId: messageIdFor(`account-${mail.kind}`, randomUUID(), domain),
    });
    await enqueue(tx, { ...composed, source: `account:${mail.to}` });
  };
}

/** The platform's options for a server: links, mails, custom-domain proof, its own host names. */
export function platformOptions(config: Config): PlatformOptions {
  const apiHost = new URL(config.baseUrl).hostname;
  const sitesDomain = config.sitesDomain;
  return {
    baseUrl: config.baseUrl,
    mailer: accountMailer(config),
    domainVerification: config.accounts.domainVerification,
    isPlatformHost: (h) => h === apiHost || h === sitesDomain || h.endsWith(`.${sitesDomain}`),
  };
}

/** The upgrade page of quota errors and GET /api/v1/account: the console's plans page. */
export const upgradeUrlOf = (config: Config) => `${config.baseUrl}/console/plans`;

export function accountHooks(deps: {
  config: Config;
  platform: Platform;
  forms: FormsService;
  submissions: Submissions;
  addresses: NotificationAddresses;
  databases: SqliteDatabases;
  deploys: DeploysService;
  limiters: AccountHooks['limiters'];
  siteCreated: SiteCreatedHook | undefined;
  logger: Logger;
}): AccountHooks {
  const { config, platform, forms, submissions, addresses, databases, deploys } = deps;
  /** The address with its confirmation state, as the account API shows it. */
  const notificationOf = async (form: Parameters<NotificationAddresses['stateOf']>[0]) => {
    const state = await addresses.stateOf(form);
    return { email: form.notificationEmail, status: state.status, message: addressMessage(state) };
  };
  const cluster = clusterSites(config, platform, deps.logger);

  /**
   * Standalone: each database and form goes by its own path (replicas, pending mail), then the
   * site. A replica a shard could still write to (it held the lease), or that the bucket failed
   * to delete, is queued for a second sweep, which the api replicas' sweep carries out.
   */
  const deleteHere = async (siteId: number) => {
    for (const database of await databases.ofSite(siteId)) {
      const removed = await databases.removeDatabase(database.id, { keepReplica: false, queueSweep: true });
      if (removed?.sweepReplicaAgainAt)
        deps.logger.info(
          { siteId, databaseId: database.id, after: removed.sweepReplicaAgainAt },
          'the SQLite replica in S3 is swept again after its lease ends',
        );
    }
    for (const form of await forms.list({ siteId })) await forms.delete({ siteId }, form.id);
    await platform.deleteSite(siteId);
  };

  return {
    signup: config.accounts.signup,
    mail: config.mail.smtpUrl !== undefined,
    plansContact: config.accounts.plansContact,
    maxSitesPerAccount: config.accounts.maxSitesPerAccount,
    upgradeUrl: upgradeUrlOf(config),
    limiters: deps.limiters,
    async usage(accountId) {
      const [formCount, month, sqlite] = await Promise.all([
        forms.countForAccount(accountId),
        submissions.monthUsage(accountId),
        databases.accountUsage(accountId),
      ]);
      return {
        forms: formCount,
        submissionsThisMonth: month.used,
        submissionsResetAt: month.resetsAt,
        sqliteDatabases: sqlite.databases,
        largestSqliteBytes: sqlite.largestBytes,
        largestSqliteUsers: sqlite.largestUsers,
      };
    },
    deployRetention: (plan) => ({ deploys: DEPLOY_RETENTION[plan], drafts: DRAFT_RETENTION[plan] }),
    rollback: { bytes: (siteIds) => deploys.rollbackBytes(siteIds), limit: rollbackLimit },
    siteCreated: deps.siteCreated,
    async deleteSite(siteId) {
      if (cluster && (await cluster.deleteSite(siteId))) return;
      await deleteHere(siteId);
    },
    domainSpec: cluster?.domainSpec,
    forms: {
      async notification(siteId, formId) {
        try {
          return await notificationOf(await forms.get({ siteId }, formId));
        } catch (err) {
          if (isAppError(err)) return undefined;
          throw err;
        }
      },
      async setNotification(siteId, formId, email) {
        return notificationOf(await forms.update({ siteId }, formId, { notification_email: email }));
      },
    },
  };
}

/**
 * Cluster mode: a site controlled by a Site resource is deleted through it (deletionPolicy Delete,
 * then delete: its finalizer removes forms, databases and the site), and its custom domains are
 * written to its spec (the resource is what the controller mirrors into the database).
 */
/** Tries at one domain edit of a Site resource that other writers keep changing (each a 409). */
const DOMAIN_EDIT_ATTEMPTS = 10;

function clusterSites(config: Config, platform: Platform, logger: Logger) {
  const kube = config.kubernetes;
  if (!kube) return undefined;
  // Loaded on first use (as the site-created hook does), not at every start of every role.
  let client:
    | Promise<{ resources: SiteResources; siteIdAnnotation: string; isConflict: (err: unknown) => boolean }>
    | undefined;
  const sitesClient = () =>
    (client ??= import('../kube/index.js').then((k) => ({
      resources: new k.SiteResources(k.kubeConfigFromEnvironment(), kube.namespace, 'hostplane-api', {
        requestTimeoutMs: kube.requestTimeoutMs,
      }),
      siteIdAnnotation: k.SITE_ID_ANNOTATION,
      isConflict: k.isConflict,
    })));
  /**
   * The site's resource: the one that claimed it, or (between the site-created hook's apply and
   * the controller's claim, when resource_uid is still empty) the one named by its slug that
   * carries its site-id annotation.
   */
  const resourceOf = async (siteId: number) => {
    const routing = await platform.siteRouting(siteId);
    if (!routing) return undefined;
    const { resources, siteIdAnnotation, isConflict } = await sitesClient();
    if (routing.resourceUid) {
      const found = (await resources.list()).find((r) => r.metadata.uid === routing.resourceUid);
      return found
        ? { resources, isConflict, resource: found, name: found.metadata.name, claimed: true }
        : undefined;
    }
    const named = await resources.get(routing.slug);
    return named?.metadata.annotations?.[siteIdAnnotation] === String(siteId)
      ? { resources, isConflict, resource: named, name: named.metadata.name, claimed: false }
      : undefined;
  };
  /**
   * Lists (`present`) or unlists one hostname in the resource's spec.customDomains: an edit of the
   * list the resource holds, conditional on its resourceVersion, made again on a 409 (another api
   * replica or an operator wrote meanwhile). Never the whole list from a database read: two
   * replicas doing that at once leave the last writer's stale list, and the controller then
   * deletes the other's domain. True when this call changed the list.
   */
  const editDomains = async (siteId: number, hostname: string, present: boolean): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      const target = await resourceOf(siteId);
      if (!target) return false;
      const current = target.resource.spec.customDomains ?? [];
      if (current.includes(hostname) === present) return false;
      const customDomains = present ? [...current, hostname] : current.filter((h) => h !== hostname);
      try {
        await target.resources.patchSpec(
          target.name,
          { customDomains },
          { resourceVersion: target.resource.metadata.resourceVersion },
        );
        return true;
      } catch (err) {
        if (!target.isConflict(err) || attempt >= DOMAIN_EDIT_ATTEMPTS) throw err;
      }
    }
  };
  return {
    /** True when the resource's finalizer finishes the deletion; false: the caller deletes here. */
    async deleteSite(siteId: number): Promise<boolean> {
      const target = await resourceOf(siteId);
      if (!target) return false;
      await target.resources.patchSpec(target.name, { deletionPolicy: 'Delete' });
      await target.resources.delete(target.name);
      // The finalizer finishes the deletion; until then the site stops serving (detached by it).
      // An unclaimed resource is gone before the controller adopts it: the site is deleted here.
      logger.info({ siteId, resource: target.name }, 'site deleted through its Site resource');
      return target.claimed;
    },
    domainSpec: (siteId: number) => ({
      add: (hostname: string) => editDomains(siteId, hostname, true),
      remove: async (hostname: string) => void (await editDomains(siteId, hostname, false)),
    }),
  };
}
