import type { FunctionComponent } from 'preact';
import { Plans } from './screens/plans.js';
import { SignIn } from './screens/sign-in.js';
import { SiteFiles } from './screens/site-files.js';
import { SqliteDatabases } from './screens/sqlite/databases.js';
import { SqliteQueryConsole } from './screens/sqlite/query-console.js';
import { SqliteTableBrowser } from './screens/sqlite/table-browser.js';
import { SqliteTokens } from './screens/sqlite/tokens.js';
import { SqliteUsers } from './screens/sqlite/users.js';
import { Sites } from './screens/sites.js';

export interface ScreenProps {
  params: Record<string, string>;
  /** Called after a screen signed the browser in (sign-in, invitation accepted). */
  onSignedIn(): Promise<void>;
}

export interface Route {
  /** Below /console, with `:name` segments. */
  path: string;
  screen: FunctionComponent<ScreenProps>;
}

/** Screens for a visitor who is not signed in (mailed links land here). */
export const publicRoutes: Route[] = [{ path: '/sign-in', screen: SignIn }];

/** Screens of the signed-in console. */
export const signedInRoutes: Route[] = [
  { path: '/', screen: Sites },
  { path: '/plans', screen: Plans },
  { path: '/sites/:siteId', screen: SiteFiles },
  { path: '/sites/:siteId/files', screen: SiteFiles },
  { path: '/sites/:siteId/sqlite', screen: SqliteDatabases },
  { path: '/sites/:siteId/sqlite/tokens', screen: SqliteTokens },
  { path: '/sites/:siteId/sqlite/:db/tables', screen: SqliteTableBrowser },
  { path: '/sites/:siteId/sqlite/:db/query', screen: SqliteQueryConsole },
  { path: '/sites/:siteId/sqlite/:db/users', screen: SqliteUsers },
];
