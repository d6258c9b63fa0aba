import type { Request } from 'express';
import { AppError } from '../errors/index.js';
import { unauthorized } from './auth.js';
import type { Platform } from './service.js';
import type { Site } from './types.js';

/**
 * The site a request acts on. An API key is scoped to exactly one site: naming another one is
 * refused. A session may pick any site of its account with `site_id`, else its first site.
 */
export async function siteForRequest(
  req: Request,
  platform: Platform,
  requestedSiteId?: number,
): Promise<Site> {
  const principal = req.principal;
  if (!principal) throw unauthorized('Missing API key: send it in the X-API-Key header.');
  if (principal.siteId !== undefined) {
    if (requestedSiteId !== undefined && requestedSiteId !== principal.siteId) {
      throw new AppError('KEY_SCOPE');
    }
    const site = await platform.getSite(principal.siteId);
    if (!site) throw unauthorized('Invalid or expired API key.');
    return site;
  }
  const site = await platform.siteOfAccount(principal.accountId, requestedSiteId);
  if (!site) {
    throw new AppError('NOT_FOUND', {
      message:
        requestedSiteId === undefined
          ? 'This account has no site yet.'
          : `Site ${requestedSiteId} not found in this account.`,
    });
  }
  return site;
}
