import type { FunctionComponent } from 'preact';
import { FormEditor } from './screens/forms/editor.js';
import { FormEmbed } from './screens/forms/embed.js';
import { FormsList } from './screens/forms/list.js';
import { FormSubmissions } from './screens/forms/submissions.js';
import { Account } from './screens/account.js';
import { ConfirmNotification } from './screens/confirm-notification.js';
import { ForgotPassword } from './screens/forgot.js';
import { AcceptInvite } from './screens/invite.js';
import { Plans } from './screens/plans.js';
import { ResetPassword } from './screens/reset.js';
import { SignIn } from './screens/sign-in.js';
import { SiteDeploys } from './screens/site-deploys.js';
import { SiteDomains } from './screens/site-domains.js';
import { SignUp } from './screens/sign-up.js';
import { SiteFiles } from './screens/site-files.js';
import { SiteKeys } from './screens/site-keys.js';
import { SiteSettings } from './screens/site-settings.js';
import { SqliteDatabases } from './screens/sqlite/databases.js';
import { SqliteQueryConsole } from './screens/sqlite/query-console.js';
import { SqliteTableBrowser } from './screens/sqlite/table-browser.js';
import { SqliteTokens } from './screens/sqlite/tokens.js';
import { SqliteUsers } from './screens/sqlite/users.js';
import { Sites } from './screens/sites.js';
import { VerifyEmail } from './screens/verify.js';

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
export const publicRoutes: Route[] = [
  { path: '/sign-in', screen: SignIn },
  { path: '/invite', screen: AcceptInvite },
  { path: '/verify', screen: VerifyEmail },
  { path: '/forgot', screen: ForgotPassword },
  { path: '/reset', screen: ResetPassword },
  { path: '/sign-up', screen: SignUp },
  { path: '/confirm-notification', screen: ConfirmNotification },
];

/** Screens of the signed-in console. */
export const signedInRoutes: Route[] = [
  { path: '/', screen: Sites },
  { path: '/plans', screen: Plans },
  { path: '/account', screen: Account },
  { path: '/sites/:siteId', screen: SiteFiles },
  { path: '/sites/:siteId/files', screen: SiteFiles },
  { path: '/sites/:siteId/keys', screen: SiteKeys },
  { path: '/sites/:siteId/domains', screen: SiteDomains },
  { path: '/sites/:siteId/settings', screen: SiteSettings },
  { path: '/sites/:siteId/deploys', screen: SiteDeploys },
  { path: '/sites/:siteId/forms', screen: FormsList },
  { path: '/sites/:siteId/forms/:formId', screen: FormEditor },
  { path: '/sites/:siteId/forms/:formId/embed', screen: FormEmbed },
  { path: '/sites/:siteId/forms/:formId/submissions', screen: FormSubmissions },
  { path: '/sites/:siteId/sqlite', screen: SqliteDatabases },
  { path: '/sites/:siteId/sqlite/tokens', screen: SqliteTokens },
  { path: '/sites/:siteId/sqlite/:db/tables', screen: SqliteTableBrowser },
  { path: '/sites/:siteId/sqlite/:db/query', screen: SqliteQueryConsole },
  { path: '/sites/:siteId/sqlite/:db/users', screen: SqliteUsers },
];
