/** The deploy rows as the service hands them out, and their ids. */
import { randomInt } from 'node:crypto';
import type { DeployState } from './deploy-blobs.js';
import type { DeployClient } from './deploy-client.js';

/** A deploy's id: 12 characters of base32 (lower case), random. */
export const DEPLOY_ID = /^[a-z2-7]{12}$/;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

export interface Deploy {
  id: string;
  siteId: number;
  state: DeployState;
  source: 'api' | 'files_api';
  draft: boolean;
  fileCount: number;
  bytes: number;
  keyPrefix: string | null;
  client: DeployClient | null;
  createdAt: Date;
  finalizedAt: Date | null;
  publishedAt: Date | null;
  message: string | null;
  /** Against the live file set at its create, then at its last switch (null: not counted). */
  changes: DeployChanges | null;
}

export interface DeployChanges {
  added: number;
  changed: number;
  removed: number;
}

export interface ManifestEntry {
  path: string;
  hash: string;
  size: number | null;
  contentType: string;
}

/** A deploy file as the edge reads it (the shape of a site_files row it needs). */
export interface PreviewRow {
  path: string;
  kind: 'file';
  blobKey: string;
  size: number;
  contentType: string;
  updatedAt: Date;
}

/** A page's offset, exact for any page the query allows (past 2^53 too). */
export const offsetOf = (page: number, perPage: number) => String((BigInt(page) - 1n) * BigInt(perPage));

export const newDeployId = () => Array.from({ length: 12 }, () => ID_ALPHABET[randomInt(32)]).join('');

export interface DeployDbRow {
  id: string;
  site_id: number;
  state: DeployState;
  source: 'api' | 'files_api';
  draft: boolean;
  file_count: number;
  bytes: string;
  key_prefix: string | null;
  client: DeployClient | null;
  created_at: Date | string;
  finalized_at: Date | string | null;
  published_at: Date | string | null;
  message: string | null;
  files_added: number | null;
  files_changed: number | null;
  files_removed: number | null;
}

export const date = (v: Date | string) => (v instanceof Date ? v : new Date(v));
export const toDeploy = (r: DeployDbRow): Deploy => ({
  id: r.id,
  siteId: r.site_id,
  state: r.state,
  source: r.source,
  draft: r.draft,
  fileCount: r.file_count,
  bytes: Number(r.bytes),
  keyPrefix: r.key_prefix,
  client: r.client ?? null,
  createdAt: date(r.created_at),
  finalizedAt: r.finalized_at === null ? null : date(r.finalized_at),
  publishedAt: r.published_at === null ? null : date(r.published_at),
  message: r.message,
  changes:
    r.files_added === null || r.files_changed === null || r.files_removed === null
      ? null
      : { added: r.files_added, changed: r.files_changed, removed: r.files_removed },
});
