import type { SiteResource, SqliteDatabaseResource } from '../../src/kube/index.js';
import type { Informer } from '../runtime/informer.js';
import type { ControllerContext } from '../runtime/setup.js';

/** What every part of the SqliteDatabase controller works with. */
export type SqliteDatabaseContext = Pick<ControllerContext, 'platform' | 'sqlite' | 'clients' | 'events'> & {
  /** The caches (read, never written): the reconciler's view of the cluster. */
  databases: Pick<Informer<SqliteDatabaseResource>, 'get' | 'list'>;
  sites: Pick<Informer<SiteResource>, 'get' | 'list'>;
};

/** The Secret holding the token of a database created from a SqliteDatabase resource. */
export const tokenSecretNameFor = (resourceName: string): string =>
  `sqldb-${resourceName}-token`.slice(0, 253);

/** The name of that token in the database's token list. */
export const tokenNameFor = (resourceName: string): string => `SqliteDatabase ${resourceName}`;
