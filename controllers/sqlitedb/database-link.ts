import { isAppError } from '../../src/errors/index.js';
import {
  isNotFound,
  MANAGED_BY_LABEL,
  SITE_LABEL,
  SQLITE_DATABASE_ID_ANNOTATION,
  SQLITE_DATABASE_ID_LABEL,
  type SqliteDatabaseResource,
  type SqliteDatabaseSpec,
} from '../../src/kube/index.js';
import { newSecret } from '../../src/platform/index.js';
import { normalizeDatabasePath, type SqliteDatabaseRow } from '../../src/sqlite/index.js';
import type { Refusal } from '../runtime/reconcile.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { tokenNameFor, tokenSecretNameFor, type SqliteDatabaseContext } from './context.js';

/** The token of a database created from its resource, as the status reports it. */
export interface TokenRef {
  tokenId: number;
  secretName: string;
}

/** The database a SqliteDatabase controls, and the resource as last written. */
export interface Linked {
  database: SqliteDatabaseRow;
  /** Set when the database was created from this resource (its token is in this Secret). */
  token?: TokenRef;
  /** Linking may annotate and label the resource: later writes need its new resourceVersion. */
  resource: SqliteDatabaseResource;
}

/** The resource names a database (its id annotation) that no longer exists. */
export interface Stale {
  staleDatabaseId: number;
}

/**
 * The database this resource controls. A database is (site, path): the oldest resource naming
 * that pair controls it, any other is refused. Then: the annotated one (created by the API or the
 * resync); else the one at that path (created through the API: adopted); else a new one with a
 * readwrite token, whose Secret is written first so that a crash in between never loses it.
 */
export async function linkDatabase(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  spec: SqliteDatabaseSpec,
): Promise<Linked | Refusal | Stale> {
  const { sqlite, events } = context;
  const site = await siteOf(context, spec.siteRef.name);
  if ('refused' in site) return site;
  const path = databasePath(spec.path);
  if (path === undefined) {
    return { refused: `path "${spec.path}" is not a valid database path`, reason: 'InvalidPath' };
  }
  const holder = controllingResource(context, spec.siteRef.name, path);
  if (holder && holder.metadata.uid !== resource.metadata.uid) {
    return {
      refused: `SqliteDatabase ${holder.metadata.name} already controls ${path} of Site ${spec.siteRef.name}`,
      reason: 'DatabaseClaimed',
    };
  }

  const annotated = annotatedDatabaseId(resource);
  if (annotated !== undefined) {
    const row = await sqlite.byId(annotated);
    if (!row) return { staleDatabaseId: annotated };
    if (row.siteId !== site.siteId || row.path !== path) {
      return {
        refused: `database ${annotated} is not ${path} of Site ${spec.siteRef.name}`,
        reason: 'DatabaseMismatch',
      };
    }
    const token = await tokenOfResource(context, resource, row.id);
    return { database: row, token, resource: await markLinked(context, resource, row.id) };
  }

  const existing = await sqlite.bySitePath(site.siteId, path);
  if (existing) {
    // Our own creation whose annotation did not land, or a database created through the API.
    const token = await tokenOfResource(context, resource, existing.id);
    const marked = await markLinked(context, resource, existing.id);
    if (!token) events.normal(marked, 'Adopted', `adopted database ${existing.id} (${path})`);
    return { database: existing, token, resource: marked };
  }

  const secretName = tokenSecretNameFor(resource.metadata.name);
  const secretToken = await ensureTokenSecret(context, resource, secretName);
  try {
    const created = await sqlite.create(site.siteId, path, {
      token: secretToken,
      tokenName: tokenNameFor(resource.metadata.name),
      shard: spec.shard,
      replicationEnabled: spec.replication.enabled,
    });
    const marked = await markLinked(context, resource, created.database.id);
    events.normal(
      marked,
      'Created',
      `created database ${created.database.id} (${path}) on site ${site.siteId}; its readwrite token is in Secret ${secretName}`,
    );
    return { database: created.database, token: { tokenId: created.tokenId, secretName }, resource: marked };
  } catch (err) {
    if (isAppError(err, 'SQLITE_COUNT_LIMIT')) return { refused: err.message, reason: 'DatabaseLimit' };
    // A file or folder in the way, or the site's file limit.
    if (isAppError(err, 'CONFLICT')) return { refused: err.message, reason: 'PathTaken' };
    if (isAppError(err, 'FILE_LIMIT')) return { refused: err.message, reason: 'FileLimit' };
    throw err;
  }
}

/** The database id annotation, when it is a valid id. */
export function annotatedDatabaseId(resource: SqliteDatabaseResource): number | undefined {
  const value = Number(resource.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/** The normalized path (what the database row holds), or undefined when it is not valid. */
export function databasePath(path: string): string | undefined {
  try {
    return normalizeDatabasePath(path);
  } catch {
    return undefined;
  }
}

/**
 * Of the cached resources naming (site, path), the one that controls the database: the oldest
 * (by creation, then name). A copy applied later, or a second resource for the same path, is
 * refused and owns nothing: deleting it leaves the database alone.
 */
export function controllingResource(
  context: Pick<SqliteDatabaseContext, 'databases'>,
  siteName: string,
  path: string,
): SqliteDatabaseResource | undefined {
  const claimants = context.databases
    .list()
    .filter((r) => r.spec.siteRef?.name === siteName && databasePath(r.spec.path ?? '') === path);
  const created = (r: SqliteDatabaseResource) => new Date(r.metadata.creationTimestamp ?? 0).getTime();
  claimants.sort((a, b) => created(a) - created(b) || a.metadata.name.localeCompare(b.metadata.name));
  return claimants[0];
}

/**
 * The site behind a Site resource: the one that resource controls (by its uid), so a database can
 * only be created on a site through the Site resource that owns it.
 */
export async function siteOf(
  context: SqliteDatabaseContext,
  siteName: string,
): Promise<{ siteId: number } | Refusal> {
  const site = context.sites.get(context.clients.namespace, siteName);
  if (!site) return { refused: `Site ${siteName} does not exist`, reason: 'SiteNotFound' };
  const routing = await context.platform.siteRoutingOfResource(site.metadata.uid ?? '');
  if (!routing) return { refused: `Site ${siteName} is not linked to a site yet`, reason: 'SiteNotReady' };
  return { siteId: routing.siteId };
}

/**
 * The token this resource's Secret holds, when it opens `databaseId`: the status says so once
 * reported; otherwise (not reported yet, or wiped by a refusal since) the Secret is read.
 */
async function tokenOfResource(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  databaseId: number,
): Promise<TokenRef | undefined> {
  const { tokenId, tokenSecretName } = resource.status ?? {};
  if (tokenId !== undefined && tokenSecretName) return { tokenId, secretName: tokenSecretName };
  const secretName = tokenSecretNameFor(resource.metadata.name);
  const token = await readTokenSecret(context, secretName);
  if (token === undefined) return undefined;
  const found = await context.sqlite.tokenOf(token);
  return found?.databaseId === databaseId ? { tokenId: found.tokenId, secretName } : undefined;
}

/** The token a token Secret holds; undefined when there is no such Secret. */
export async function readTokenSecret(
  context: SqliteDatabaseContext,
  name: string,
): Promise<string | undefined> {
  const { core, namespace } = context.clients;
  try {
    const secret = await core.readNamespacedSecret({ name, namespace });
    const stored = secret.data?.token;
    return stored ? Buffer.from(stored, 'base64').toString('utf8') : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The token to create the database with, kept in a Secret (read back if a previous pass wrote it). */
async function ensureTokenSecret(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  secretName: string,
): Promise<string> {
  const { core, namespace } = context.clients;
  const stored = await readTokenSecret(context, secretName);
  if (stored) return stored;
  const token = newSecret('hp_sqlite_'); // the install route's format
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: {
        name: secretName,
        labels: {
          [MANAGED_BY_LABEL]: CONTROLLER_NAME,
          [SITE_LABEL]: resource.spec.siteRef.name,
        },
      },
      type: 'Opaque',
      data: { token: Buffer.from(token).toString('base64') },
    },
  });
  // A concurrent create answers 409: the retry then reads the winner's token.
  return token;
}

/** The id annotation (what the resync and the finalizer read) and the id and site labels. */
async function markLinked(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  databaseId: number,
): Promise<SqliteDatabaseResource> {
  const id = String(databaseId);
  const { annotations = {}, labels = {} } = resource.metadata;
  const siteName = resource.spec.siteRef.name;
  if (
    annotations[SQLITE_DATABASE_ID_ANNOTATION] === id &&
    labels[SQLITE_DATABASE_ID_LABEL] === id &&
    labels[SITE_LABEL] === siteName
  ) {
    return resource;
  }
  return context.clients.sqliteDatabases.patchMetadata(resource, {
    annotations: { [SQLITE_DATABASE_ID_ANNOTATION]: id },
    labels: { [SQLITE_DATABASE_ID_LABEL]: id, [SITE_LABEL]: siteName },
  });
}
