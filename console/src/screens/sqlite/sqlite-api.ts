/**
 * The SQLite API as the console uses it. Master-key calls (databases, tokens, install, end users)
 * go with the site's temporary key; calls that need a database's scoped token (schema, query,
 * exec, the user pool) go with a token the console mints for itself by install on the existing
 * path: named "Hostplane console", no user auth, read-only unless the owner switched to write,
 * expiring after a day. One per tab, site, database and mode, kept in sessionStorage (gone with
 * the tab), so page views and reloads reuse it; revoked at sign-out.
 */
import { ApiError, beforeSignOut, send, siteCall, siteKeyFor, type CallOptions } from '../../api.js';

export type Permissions = 'read' | 'readwrite';

export interface DatabaseRecord {
  path: string;
  sizeBytes: number;
  maxSizeBytes: number | null;
  version: number;
  users: number;
  maxUsers: number | null;
  activeTokens: number;
  createdAt: string;
}

export interface TokenRecord {
  id: number;
  path: string;
  name: string;
  permissions: Permissions;
  requiresUserAuth: boolean;
  allowedOrigins: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

export interface Installed {
  token: string;
  tokenId: number;
  path: string;
  permissions: Permissions;
  requiresUserAuth: boolean;
  allowedOrigins: string[];
  expiresAt: string | null;
}

export interface InstallInput {
  path: string;
  name: string;
  permissions: Permissions;
  requireUserAuth: boolean;
  expiresInDays?: number;
}

export interface EndUser {
  id: number;
  email: string;
  displayName: string | null;
  role: 'admin' | 'user';
  disabled: boolean;
  createdAt: string;
  lastLoginAt: string | null;
}

export const CONSOLE_TOKEN_NAME = 'Hostplane console';

export const listDatabases = (siteId: number) =>
  siteCall<{ databases: DatabaseRecord[]; maxDatabases: number | null }>(
    siteId,
    'GET',
    '/api/v1/sqlite/databases',
  );

export const listTokens = (siteId: number) =>
  siteCall<{ tokens: TokenRecord[] }>(siteId, 'GET', '/api/v1/sqlite/auth/tokens').then((r) => r.tokens);

export const install = (siteId: number, input: InstallInput) =>
  siteCall<Installed>(siteId, 'POST', '/api/v1/sqlite/auth/install', { json: input });

export const revokeToken = (siteId: number, tokenId: number) =>
  siteCall<{ revokedAt: string }>(siteId, 'DELETE', `/api/v1/sqlite/auth/tokens/${tokenId}`);

/** A token's state as the list shows it. */
export function tokenState(token: TokenRecord, now = Date.now()): 'active' | 'revoked' | 'expired' {
  if (token.revokedAt) return 'revoked';
  if (token.expiresAt && Date.parse(token.expiresAt) <= now) return 'expired';
  return 'active';
}

// --- the console's own scoped tokens ----------------------------------------------------------

const STORE_PREFIX = 'hostplane.sqlite.';
interface Stored {
  siteId: number;
  token: string;
  tokenId: number;
  expiresAt: string;
}
const pending = new Map<string, Promise<string>>();
const storeKey = (siteId: number, path: string, mode: Permissions) =>
  `${STORE_PREFIX}${siteId}:${mode}:${path}`;

function stored(key: string): Stored | undefined {
  try {
    const value = sessionStorage.getItem(key);
    return value ? (JSON.parse(value) as Stored) : undefined;
  } catch {
    return undefined;
  }
}

async function mintConsoleToken(siteId: number, path: string, mode: Permissions) {
  // Install creates a missing database: a mistyped or stale address must not make one.
  const { databases } = await listDatabases(siteId);
  if (!databases.some((db) => db.path === path))
    throw new ApiError(404, 'NOT_FOUND', `This site has no SQLite database at ${path}.`);
  return (await installConsoleToken(siteId, path, mode)).token;
}

/**
 * Creates the database at `path` (the owner's "Create a database"): install makes a database only
 * with a token, so the token is the console's own (read-only, a day), kept for this tab's browsing.
 * The tokens the site's pages use are created apart, on the Tokens screen.
 */
export async function createDatabase(siteId: number, path: string): Promise<string> {
  const { databases } = await listDatabases(siteId);
  if (databases.some((db) => db.path === path))
    throw new ApiError(409, 'EXISTS', `This site already has a database at ${path}.`);
  return (await installConsoleToken(siteId, path, 'read')).path;
}

async function installConsoleToken(siteId: number, path: string, mode: Permissions) {
  const minted = await install(siteId, {
    path,
    name: `${CONSOLE_TOKEN_NAME} (${mode === 'read' ? 'read' : 'write'})`,
    permissions: mode,
    requireUserAuth: false,
    expiresInDays: 1,
  });
  const entry: Stored = {
    siteId,
    token: minted.token,
    tokenId: minted.tokenId,
    expiresAt: minted.expiresAt ?? '',
  };
  sessionStorage.setItem(storeKey(siteId, minted.path, mode), JSON.stringify(entry));
  return { token: minted.token, path: minted.path };
}

/** The console's token for (site, database, mode): kept one while it has an hour left, else minted. */
function consoleToken(siteId: number, path: string, mode: Permissions, fresh: boolean): Promise<string> {
  const key = storeKey(siteId, path, mode);
  const kept = fresh ? undefined : stored(key);
  if (kept && Date.parse(kept.expiresAt) - Date.now() > 3_600_000) return Promise.resolve(kept.token);
  let minting = pending.get(key);
  if (!minting || fresh) {
    minting = mintConsoleToken(siteId, path, mode).finally(() => pending.delete(key));
    pending.set(key, minting);
  }
  return minting;
}

/**
 * A call with the console's scoped token for the database (and the site's key when `owner`, for the
 * end-user routes). A 401 (the token revoked or expired meanwhile) mints a new token once.
 */
export async function databaseCall<T>(
  db: { siteId: number; path: string; mode: Permissions },
  method: string,
  apiPath: string,
  options: CallOptions & { owner?: boolean } = {},
): Promise<T> {
  const attempt = async (fresh: boolean) => {
    const headers: Record<string, string> = {
      ...options.headers,
      'x-sqlite-token': await consoleToken(db.siteId, db.path, db.mode, fresh),
    };
    if (options.owner) headers['x-api-key'] = await siteKeyFor(db.siteId);
    return send(method, apiPath, { ...options, headers });
  };
  let response: Response;
  try {
    response = await attempt(false);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) throw err;
    response = await attempt(true);
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** Revokes every token this tab minted (at sign-out, while the session still holds). */
async function revokeConsoleTokens(): Promise<void> {
  const keys = Object.keys(sessionStorage).filter((key) => key.startsWith(STORE_PREFIX));
  await Promise.allSettled(
    keys.map(async (key) => {
      const entry = stored(key);
      sessionStorage.removeItem(key);
      if (entry) await revokeToken(entry.siteId, entry.tokenId);
    }),
  );
}
beforeSignOut(revokeConsoleTokens);

/** The one confirmation before a screen may change a database's data (query console, table browser). */
export const confirmWrites = (path: string) => confirm(`Allow this console to change the data of ${path}?`);

/** `"name"` for SQL, whatever the name holds. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
