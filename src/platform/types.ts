import type { Plan } from './plans.js';

export interface Site {
  id: number;
  accountId: number;
  slug: string;
  name: string;
  fileCount: number;
  storageBytes: number;
  /** Folder rows of the site's file index. */
  folderCount: number;
  /** Files named .gitkeep: counted in fileCount, never listed. */
  hiddenFileCount: number;
  version: number;
}

export interface SiteUsage {
  site: Site;
  plan: Plan;
}

export interface Principal {
  accountId: number;
  /** The site a key is scoped to; for a session, undefined until resolved per request. */
  siteId: number | undefined;
  via: 'permanent_key' | 'temporary_key' | 'session';
  /** Sessions: which one (to end it, or keep it when the others end). */
  sessionId?: number;
  /** Sessions: a bearer token, or the browser's cookie (whose writes are CSRF-checked). */
  sessionKind?: 'bearer' | 'browser';
  /**
   * Sessions: until when sudo mode lasts (the last password or TOTP confirmation, plus its window);
   * `always` for an operator's session, undefined when never confirmed. A temporary key carries
   * the sudo mode of the session that minted it (read with the key, so it follows that session).
   */
  sudoUntil?: Date | 'always' | undefined;
  /** The key used, when a key authenticated (its id and the prefix shown to users). */
  key?: { id: number; prefix: string };
}
