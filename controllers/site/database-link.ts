import { isAppError } from '../../src/errors/index.js';
import {
  isNotFound,
  MANAGED_BY_LABEL,
  SITE_ID_ANNOTATION,
  SITE_LABEL,
  type SiteResource,
  type SiteSpec,
} from '../../src/kube/index.js';
import { newApiKey } from '../../src/platform/index.js';
import type { Refusal } from '../runtime/reconcile.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { keySecretNameFor, type SiteContext } from './context.js';

/** The database site a Site resource controls, and the resource as last written. */
export interface Linked {
  siteId: number;
  /** Set when this pass adopted the site (its first API key is in this Secret). */
  apiKeySecretName?: string;
  /** Linking may annotate the resource: later writes need its new resourceVersion. */
  resource: SiteResource;
}

/**
 * The database site this resource controls, claimed by its uid (so a copied annotation cannot
 * take a site over): the one it already controls; else the annotated one (an `admin
 * create-site` site or a resync-created resource); else adoption: the site its key Secret
 * opens, or a new site (the key is stored in the Secret first, so a crash in between never
 * loses it), or a detached site with the same slug (re-attached).
 */
export async function linkSite(
  context: SiteContext,
  site: SiteResource,
  spec: SiteSpec,
): Promise<Linked | Refusal> {
  const { platform, clients, events } = context;
  const uid = site.metadata.uid ?? '';
  const annotate = async (siteId: number): Promise<SiteResource> =>
    site.metadata.annotations?.[SITE_ID_ANNOTATION] === String(siteId)
      ? site
      : clients.sites.patchMetadata(site, { annotations: { [SITE_ID_ANNOTATION]: String(siteId) } });

  const controlled = await platform.siteRoutingOfResource(uid);
  if (controlled) return { siteId: controlled.siteId, resource: await annotate(controlled.siteId) };

  // A claim stands while the Site resource that holds it is still in the cache.
  const isLiveResource = (holder: string): boolean =>
    context.sites.list().some((s) => s.metadata.uid === holder);
  const claim = async (siteId: number, event: string, message: string) => {
    const result = await platform.claimSite(siteId, uid, isLiveResource);
    if (result !== 'claimed') return undefined;
    const resource = await annotate(siteId);
    events.normal(resource, event, message);
    return resource;
  };
  const claimedElsewhere = (siteId: number): Refusal => ({
    refused: `site ${siteId} is controlled by another Site resource`,
    reason: 'SiteClaimed',
  });

  const annotated = Number(site.metadata.annotations?.[SITE_ID_ANNOTATION]);
  if (Number.isInteger(annotated) && annotated > 0 && (await platform.getSite(annotated))) {
    const resource = await claim(annotated, 'Linked', `linked to site ${annotated}`);
    return resource ? { siteId: annotated, resource } : claimedElsewhere(annotated);
  }

  const secretName = keySecretNameFor(site.metadata.name);
  const apiKey = await ensureKeySecret(context, site, secretName);
  const keySite = (await platform.authenticateKey(apiKey))?.siteId;
  if (keySite !== undefined) {
    // A previous pass created the site but did not get to annotate the resource.
    const resource = await claim(
      keySite,
      'Adopted',
      `adopted site ${keySite}; its API key is in Secret ${secretName}`,
    );
    return resource ? { siteId: keySite, apiKeySecretName: secretName, resource } : claimedElsewhere(keySite);
  }
  try {
    const created = await platform.createSite({
      email: spec.owner?.email ?? context.config.kubernetes.clusterOwnerEmail,
      plan: spec.owner?.plan ?? 'free',
      slug: spec.slug,
      apiKey,
      resourceUid: uid,
    });
    const resource = await annotate(created.siteId);
    events.normal(
      resource,
      'Adopted',
      `created site ${created.siteId}; its API key is in Secret ${secretName}`,
    );
    return { siteId: created.siteId, apiKeySecretName: secretName, resource };
  } catch (err) {
    if (!isSlugTaken(err)) throw err;
  }
  const holder = await platform.siteRoutingBySlug(spec.slug);
  if (holder?.detached) {
    const resource = await claim(holder.siteId, 'Reattached', `re-attached detached site ${holder.siteId}`);
    if (resource) return { siteId: holder.siteId, resource };
  }
  return {
    refused: `slug "${spec.slug}" belongs to a site this resource does not control`,
    reason: 'SlugTaken',
  };
}

const isSlugTaken = (err: unknown): boolean => isAppError(err, 'SLUG_TAKEN');

/** The adoption key, kept in a Secret (not owned by the Site: with Retain the key outlives it). */
async function ensureKeySecret(
  context: SiteContext,
  site: SiteResource,
  secretName: string,
): Promise<string> {
  const { core, namespace } = context.clients;
  try {
    const secret = await core.readNamespacedSecret({ name: secretName, namespace });
    const stored = secret.data?.apiKey;
    if (stored) return Buffer.from(stored, 'base64').toString('utf8');
    throw new Error(`Secret ${secretName} exists but has no apiKey entry; delete it or add the key`);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const apiKey = newApiKey();
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: {
        name: secretName,
        labels: { [MANAGED_BY_LABEL]: CONTROLLER_NAME, [SITE_LABEL]: site.metadata.name },
      },
      type: 'Opaque',
      data: { apiKey: Buffer.from(apiKey).toString('base64') },
    },
  });
  // A concurrent create answers 409: the retry then reads the winner's key.
  return apiKey;
}
