import type { V1OwnerReference } from '@kubernetes/client-node';
import {
  API_VERSION,
  MANAGED_BY_LABEL,
  SITE_LABEL,
  siteKind,
  type SiteResource,
} from '../../src/kube/index.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';

/** What the objects a Site owns (Ingress, HTTPRoute, Certificates) carry in their metadata. */
export interface OwnedMetadata {
  ownerReferences?: V1OwnerReference[];
  labels?: Record<string, string>;
}

/** The labels of every object made for a Site: the controller's informers select on them. */
export function siteObjectLabels(site: SiteResource): Record<string, string> {
  return { [MANAGED_BY_LABEL]: CONTROLLER_NAME, [SITE_LABEL]: site.metadata.name };
}

/** The Site as the controlling owner: garbage collection follows it, and so do the informers' handlers. */
export function siteOwnerReference(site: SiteResource): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: siteKind.kind,
    name: site.metadata.name,
    uid: site.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function isControlledBy(metadata: OwnedMetadata | undefined, site: SiteResource): boolean {
  return (metadata?.ownerReferences ?? []).some(
    (o) => o.controller && o.kind === siteKind.kind && o.uid === site.metadata.uid,
  );
}

/** The Site that controls an object this controller made, for queueing it when the object changes. */
export function owningSiteName(object: { metadata?: OwnedMetadata }): string | undefined {
  return object.metadata?.ownerReferences?.find((o) => o.controller && o.kind === siteKind.kind)?.name;
}
