import { Router, type Request } from 'express';
import { AppError } from '../errors/index.js';
import { jsonBody, pathId, requireJsonType, type RouteRegistry } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import { normalizeEmail } from '../passwords/index.js';
import type { AccountHooks, FormNotification } from './account-hooks.js';
import * as s from './account-schemas.js';
import { planFor, type Plan } from './plans.js';
import type { Platform } from './service.js';
import { requireSudo } from './sudo.js';
import type { Site } from './types.js';

const tags = ['Account sites'];
/** Custom domains a site may have, attached and pending together. */
export const MAX_DOMAINS_PER_SITE = 20;
export const siteParam = { siteId: pathId('The site') };

/** The site of the path, when it is the signed-in account's; 404 otherwise (never another's). */
export const ownSiteOf =
  (platform: Platform) =>
  async (req: Request): Promise<Site> => {
    const id = s.pathIdOf(req.params, 'siteId');
    const site = await platform.siteOfAccount(req.principal!.accountId, id);
    if (!site)
      throw new AppError('NOT_FOUND', {
        message: `Site ${String(req.params.siteId).slice(0, 20)} not found in this account.`,
      });
    return site;
  };

/** The account's sites, their custom domains and forms' notification addresses (keys: account-key-routes.ts). */
export function accountSiteRoutes(deps: {
  platform: Platform;
  hooks: AccountHooks;
  registry: RouteRegistry;
  siteUrl: (slug: string) => string;
  logger: Logger;
}): Router {
  const { platform, hooks, registry, siteUrl, logger } = deps;
  const router = Router();
  // JSON only: a cross-site page cannot send it without a preflight (docs/developers/account-api.md).
  const body = [requireJsonType, jsonBody('16kb')];

  const ownSite = ownSiteOf(platform);

  const siteJson = async (site: Site) => {
    const usage = await platform.getUsage(site.id);
    return siteJsonOf(site, usage?.plan ?? planFor('free'), await platform.domains.hostnames(site.id));
  };
  const siteJsonOf = (site: Site, plan: Plan, customDomains: string[]) => {
    const created = (site as Site & { createdAt?: Date }).createdAt ?? new Date();
    return {
      id: site.id,
      slug: site.slug,
      name: site.name,
      url: siteUrl(site.slug),
      created_at: created.toISOString(),
      files: { used: site.fileCount, limit: plan.maxFiles },
      storage_bytes: { used: site.storageBytes, limit: plan.maxStorageBytes },
      custom_domains: customDomains,
    };
  };

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites',
    summary: 'List the account’s sites with their usage',
    description:
      'Every site of the account, oldest first, with files and storage against the plan and its custom domains.',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Sites', schema: s.sitesResponse } },
    handler: async ({ req, res }) => {
      const accountId = req.principal!.accountId;
      // Three queries whatever the number of sites: the sites, the plan, every site's domains.
      const [sites, profile] = await Promise.all([
        platform.sites.listOfAccount(accountId),
        platform.accounts.profile(accountId),
      ]);
      const plan = planFor(profile?.plan ?? 'free');
      const domains = await platform.domains.hostnamesOfSites(sites.map((site) => site.id));
      res.json({
        success: true,
        sites: sites.map((site) => siteJsonOf(site, plan, domains.get(site.id) ?? [])),
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sites',
    summary: 'Create a site',
    description:
      'Creates a site of the account with its first permanent API key (shown once). The slug is the site’s subdomain: 1-63 lower-case letters, digits or hyphens, not at either end; a taken slug is a 409. Open sign-up accounts must have verified their address first (403 EMAIL_NOT_VERIFIED). In the cluster the site gets its Site resource like one made by `hostplane admin create-site`. An account has at most `HOSTPLANE_MAX_SITES_PER_ACCOUNT` sites (default 100; 403 LIMIT_REACHED).',
    tags,
    auth: 'session',
    secret: true,
    middleware: body,
    body: s.createSiteBody,
    errors: ['INVALID_SLUG', 'SLUG_TAKEN', 'EMAIL_NOT_VERIFIED', 'LIMIT_REACHED'],
    responses: { 201: { description: 'Created', schema: s.createdSiteResponse } },
    handler: async ({ req, res, body }) => {
      const profile = await platform.accounts.profile(req.principal!.accountId);
      if (!profile)
        throw new AppError('UNAUTHORIZED', { message: 'The account is gone.', hint: 'Sign in again.' });
      if (!profile.emailVerified) throw new AppError('EMAIL_NOT_VERIFIED');
      // Checked before the insert: concurrent creations can pass it together (a bound, not a quota).
      const limit = hooks.maxSitesPerAccount;
      if ((await platform.sites.countOfAccount(profile.id)) >= limit)
        throw new AppError('LIMIT_REACHED', {
          message: `This account has its ${limit} sites, the most this server allows: delete one first.`,
          limit,
        });
      const created = await platform.createSite({
        email: profile.email,
        slug: body.slug,
        plan: profile.plan,
        name: body.name,
      });
      if (hooks.siteCreated) {
        const outcome = await hooks.siteCreated(created);
        logger.info({ siteId: created.siteId, outcome }, 'site created from the account API');
      }
      const site = await platform.getSite(created.siteId);
      res.status(201).json({ success: true, site: await siteJson(site!), api_key: created.apiKey });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites/:siteId',
    params: siteParam,
    summary: 'Read one site with its usage',
    description: '404 when the account has no such site.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'The site', schema: s.siteResponse } },
    handler: async ({ req, res }) => {
      res.json({ success: true, site: await siteJson(await ownSite(req)) });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/account/sites/:siteId',
    params: siteParam,
    summary: 'Delete a site with everything in it',
    description:
      'Removes the site with its files, keys, custom domains, forms with their submissions and SQLite databases (the same path a Site deleted with `deletionPolicy: Delete` takes). Its subdomain answers 404 at once; it cannot be undone. ' +
      'Needs sudo mode: a session that signed in or confirmed its password (POST /api/v1/account/sudo) within the last 15 minutes; otherwise 403 SUDO_REQUIRED.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND', 'SUDO_REQUIRED'],
    responses: { 200: { description: 'Deleted', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      requireSudo(req);
      await hooks.deleteSite(site.id);
      res.json({ success: true, message: `Site "${site.slug}" deleted.` });
    },
  });

  const domainSpec = (siteId: number) => hooks.domainSpec?.(siteId);

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites/:siteId/domains',
    params: siteParam,
    summary: 'List the site’s custom domains',
    description: 'Active domains, and pending ones with the DNS TXT record that proves them.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Domains', schema: s.domainsResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      res.json({ success: true, domains: await platform.domains.list(site.id) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sites/:siteId/domains',
    params: siteParam,
    summary: 'Attach a custom domain',
    description:
      'With `HOSTPLANE_DOMAIN_VERIFICATION=dns` (default) the domain is pending (202) until a TXT record `_hostplane.<domain>` holds the answered value: create it, then POST …/domains/{hostname}/verify. With `off` (local use) it is attached at once (201). Point the domain at the platform (CNAME to the site’s host) for it to serve. A domain of another site is a 409; the platform’s own names are refused. A site has at most 20 domains, attached and pending together (403 LIMIT_REACHED).',
    tags,
    auth: 'session',
    middleware: body,
    body: s.domainBody,
    errors: ['NOT_FOUND', 'DOMAIN_TAKEN', 'LIMIT_REACHED'],
    responses: {
      201: { description: 'Attached', schema: s.domainResponse },
      202: { description: 'Pending its DNS proof', schema: s.domainResponse },
    },
    handler: async ({ req, res, body }) => {
      const site = await ownSite(req);
      const hostname = platform.domains.normalize(body.hostname);
      const held = await platform.domains.list(site.id);
      if (held.length >= MAX_DOMAINS_PER_SITE && !held.some((d) => d.hostname === hostname))
        throw new AppError('LIMIT_REACHED', {
          message: `This site has ${MAX_DOMAINS_PER_SITE} custom domains (attached or pending), the most it can have: detach one first.`,
          limit: MAX_DOMAINS_PER_SITE,
        });
      const domain = await platform.domains.request(site.id, hostname, domainSpec(site.id));
      res.status(domain.status === 'active' ? 201 : 202).json({ success: true, domain });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sites/:siteId/domains/:hostname/verify',
    params: { ...siteParam, hostname: { type: 'string', maxLength: 253, description: 'The domain' } },
    summary: 'Check a pending domain’s DNS TXT record and attach it',
    description:
      '409 DOMAIN_NOT_VERIFIED while the record is missing (DNS changes take a while); an active domain answers as it is.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND', 'DOMAIN_TAKEN', 'DOMAIN_NOT_VERIFIED'],
    responses: { 200: { description: 'Attached', schema: s.domainResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const domain = await platform.domains.verify(site.id, String(req.params.hostname), domainSpec(site.id));
      res.json({ success: true, domain });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/account/sites/:siteId/domains/:hostname',
    params: { ...siteParam, hostname: { type: 'string', maxLength: 253, description: 'The domain' } },
    summary: 'Detach a custom domain',
    description:
      'The domain stops serving the site at once (or its pending claim goes). 404 when the site has no such domain.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Detached', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const hostname = String(req.params.hostname).slice(0, 253);
      if (!(await platform.domains.detach(site.id, hostname, domainSpec(site.id))))
        throw new AppError('NOT_FOUND', { message: `The site has no domain ${hostname}.` });
      res.json({ success: true, message: `${hostname} detached.` });
    },
  });

  const formParams = { ...siteParam, formId: pathId('The form') };
  const formOf = (req: Request) => {
    const formId = s.pathIdOf(req.params, 'formId');
    return formId;
  };
  const notificationJson = async (site: Site, formId: number, current: FormNotification) => ({
    success: true,
    form_id: formId,
    notification_email: current.email,
    effective_email: current.email ?? (await platform.accountContact(site.accountId))?.email ?? '',
    notification_email_status: current.status,
    notification_email_message: current.message,
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites/:siteId/forms/:formId/notification',
    params: formParams,
    summary: 'Read where a form’s submissions are mailed',
    description: '`notification_email` null: the account’s email (`effective_email`).',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'The address', schema: s.notificationResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const formId = formOf(req);
      const current = await hooks.forms.notification(site.id, formId);
      if (!current) throw new AppError('NOT_FOUND', { message: `Form ${formId} not found on this site.` });
      res.json(await notificationJson(site, formId, current));
    },
  });

  registry.add(router, {
    method: 'put',
    path: '/api/v1/account/sites/:siteId/forms/:formId/notification',
    params: formParams,
    summary: 'Set where a form’s submissions are mailed',
    description:
      'An address, or null for the account’s email. Applies to the next submission. A new address other than the account’s own verified email is `pending` until its owner follows the link mailed to it (`POST /api/v1/forms/{id}/notification-email/resend` mails a new one); until then submissions are stored but not mailed. 403 LIMIT_REACHED when 10 addresses of the account already wait for confirmation.',
    tags,
    auth: 'session',
    middleware: body,
    body: s.notificationBody,
    errors: ['NOT_FOUND', 'INVALID_EMAIL', 'LIMIT_REACHED'],
    responses: { 200: { description: 'The address', schema: s.notificationResponse } },
    handler: async ({ req, res, body }) => {
      const site = await ownSite(req);
      const formId = formOf(req);
      if (!(await hooks.forms.notification(site.id, formId)))
        throw new AppError('NOT_FOUND', { message: `Form ${formId} not found on this site.` });
      const email = body.notification_email === null ? null : normalizeEmail(body.notification_email);
      const updated = await hooks.forms.setNotification(site.id, formId, email);
      res.json(await notificationJson(site, formId, updated));
    },
  });
  return router;
}
