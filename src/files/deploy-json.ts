import { siteUrl, type Config } from '../config/index.js';
import type { Site } from '../platform/index.js';
import type { Deploy } from './deploys.js';

// A deploy as the deploy routes answer it.

const LABEL_MAX = 63;

/** `<id>--<slug>.<sites domain>`, or null when that label would be longer than DNS allows. */
export function previewUrl(config: Config, site: Site, id: string): string | null {
  const label = `${id}--${site.slug}`;
  return label.length > LABEL_MAX ? null : siteUrl(config, label);
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function deployJson(config: Config, site: Site, d: Deploy, live: string | undefined) {
  return {
    id: d.id,
    site_id: site.id,
    state: d.state,
    draft: d.draft,
    source: d.source,
    live: d.id === live,
    file_count: d.fileCount,
    bytes: d.bytes,
    key_prefix: d.keyPrefix,
    client: d.client,
    created_at: d.createdAt.toISOString(),
    finalized_at: iso(d.finalizedAt),
    published_at: iso(d.publishedAt),
    message: d.message,
    changes: d.changes,
    preview_url: previewUrl(config, site, d.id),
  };
}
