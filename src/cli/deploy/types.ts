// The API's answers as the deploy commands read them (see src/files/deploy-schemas.ts), and where
// the commands write.

export interface HostingInfo {
  subdomain: string;
  /** The site's live address. */
  base_url: string;
}

export interface DeployJson {
  id: string;
  state: 'uploading' | 'ready' | 'draft' | 'published';
  draft: boolean;
  source: 'api' | 'files_api';
  live: boolean;
  file_count: number;
  bytes: number;
  key_prefix: string | null;
  created_at: string;
  finalized_at: string | null;
  published_at: string | null;
  preview_url: string | null;
  message: string | null;
  changes: DeployChanges | null;
}

/** Paths added, changed and removed against the live site (src/files/deploy-changes.ts). */
export interface DeployChanges {
  added: number;
  changed: number;
  removed: number;
}

export const changesLine = (c: DeployChanges) =>
  `${c.added} added, ${c.changed} changed, ${c.removed} removed`;

export interface DeployListJson {
  live_deploy_id: string | null;
  live_changed_since_deploy: boolean;
  pagination: { total_items: number; has_more: boolean };
  deploys: DeployJson[];
}

export interface ManifestPageJson {
  deploy: DeployJson;
  pagination: { has_more: boolean };
  files: { path: string; hash: string; size: number | null }[];
}

/** Where the commands write: stdout, or stderr under --json (stdout then holds one JSON object). */
export interface Io {
  json: boolean;
  /** Lines for people (stderr under --json). */
  say(line: string): void;
  /** The stream progress is drawn on. */
  progressOut: { write(text: string): void; isTTY: boolean; columns?: number };
}

export const retryNote = (what: string, attempt: number, waitMs: number, reason: string) =>
  `retrying ${what} in ${(waitMs / 1000).toFixed(1)} s (attempt ${attempt + 1}: ${reason})`;
