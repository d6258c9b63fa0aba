// Glue between domains that only the composition root knows: forms send their notices through
// the mail outbox, and `admin create-site` creates the Site resource in cluster mode. Kept out of
// start.ts so the admin CLI can load it without the whole server.
import type { Config } from '../config/index.js';
import { randomUUID } from 'node:crypto';
import type { ConfirmMailer, Notify, PurgeHook } from '../forms/index.js';
import type { createSiteResource, SiteResources } from '../kube/index.js';
import {
  composeAddressConfirmMail,
  composeSubmissionMail,
  enqueue,
  messageIdFor,
  purgeBySource,
} from '../mail/index.js';
import type { Logger } from '../observability/index.js';
import type { SiteCreatedHook } from './admin-socket.js';

/** The owner's mail about an accepted submission, queued in the submission's transaction. */
export function notifyByMail(config: Config): Notify {
  const domain = new URL(config.baseUrl).hostname;
  return async (tx, notice) => {
    const mail = composeSubmissionMail({
      formName: notice.form.name,
      fields: notice.fields,
      submittedAt: notice.submission.submittedAt,
      replyTo: notice.replyTo,
      to: notice.to,
      messageId: messageIdFor('submission', notice.submission.uuid, domain),
    });
    await enqueue(tx, { ...mail, source: `form:${notice.form.id}` });
  };
}

/**
 * The link that confirms a form's notification address, queued with its token; undefined without
 * SMTP (nothing could be confirmed, so nothing is queued).
 */
export function confirmByMail(config: Config): ConfirmMailer | undefined {
  if (!config.mail.smtpUrl) return undefined;
  const domain = new URL(config.baseUrl).hostname;
  return async (tx, mail) => {
    const composed = composeAddressConfirmMail({
      ...mail,
      messageId: messageIdFor('form-address', randomUUID(), domain),
    });
    await enqueue(tx, { ...composed, source: `form-address:${mail.to}` });
  };
}

/** A form's pending mail goes with it (same transaction as the delete). */
export function formsHooks(upgradeUrl: string) {
  return {
    upgradeUrl,
    purge: (tx: Parameters<PurgeHook>[0], form: Parameters<PurgeHook>[1]) =>
      purgeBySource(tx, `form:${form.id}`).then(() => undefined),
  };
}

/**
 * Cluster mode: after `admin create-site` commits a site, its Site resource is created (the
 * database first, so a failed apply loses nothing: the controller's resync creates it later).
 */
export function clusterSiteHook(config: Config, logger: Logger): SiteCreatedHook | undefined {
  const kube = config.kubernetes;
  if (!kube) return undefined;
  // The Kubernetes client loads on the first site (~0.4 s), not at every start of every role.
  type Client = { resources: SiteResources; createSiteResource: typeof createSiteResource };
  let client: Promise<Client> | undefined;
  const load = async () => {
    const kubeClient = await import('../kube/index.js');
    const resources = new kubeClient.SiteResources(
      kubeClient.kubeConfigFromEnvironment(),
      kube.namespace,
      'hostplane-api',
      { requestTimeoutMs: kube.requestTimeoutMs },
    );
    return { resources, createSiteResource: kubeClient.createSiteResource };
  };
  return async (site) => {
    try {
      client ??= load();
      const { resources, createSiteResource: create } = await client;
      const result = await create(resources, {
        name: site.slug,
        siteId: site.siteId,
        slug: site.slug,
      });
      return { resource: { namespace: kube.namespace, name: site.slug, result } };
    } catch (err) {
      client = undefined; // a client that failed to load is tried again on the next site
      logger.warn(
        { err, siteId: site.siteId },
        'could not create the Site resource; the controller resync will',
      );
      return { resource: { namespace: kube.namespace, name: site.slug, result: 'deferred' } };
    }
  };
}
