import type { FunctionComponent } from 'preact';
import { paths } from './links.js';
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
import type { ScreenProps } from './screens/screen.js';
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

export interface Route {
  /** Below /console, with `:name` segments (links.ts holds them all, for the screens' links). */
  path: string;
  screen: FunctionComponent<ScreenProps>;
}

/** Screens for a visitor who is not signed in (mailed links land here). */
export const publicRoutes: Route[] = [
  { path: paths.signIn, screen: SignIn },
  { path: paths.invite, screen: AcceptInvite },
  { path: paths.verify, screen: VerifyEmail },
  { path: paths.forgot, screen: ForgotPassword },
  { path: paths.reset, screen: ResetPassword },
  { path: paths.signUp, screen: SignUp },
  { path: paths.confirmNotification, screen: ConfirmNotification },
];

/** Screens of the signed-in console. */
export const signedInRoutes: Route[] = [
  { path: paths.sites, screen: Sites },
  { path: paths.plans, screen: Plans },
  { path: paths.account, screen: Account },
  { path: paths.site, screen: SiteFiles },
  { path: paths.siteFiles, screen: SiteFiles },
  { path: paths.siteKeys, screen: SiteKeys },
  { path: paths.siteDomains, screen: SiteDomains },
  { path: paths.siteSettings, screen: SiteSettings },
  { path: paths.siteDeploys, screen: SiteDeploys },
  { path: paths.forms, screen: FormsList },
  { path: paths.form, screen: FormEditor },
  { path: paths.formEmbed, screen: FormEmbed },
  { path: paths.formSubmissions, screen: FormSubmissions },
  { path: paths.sqlite, screen: SqliteDatabases },
  { path: paths.sqliteTokens, screen: SqliteTokens },
  { path: paths.databaseTables, screen: SqliteTableBrowser },
  { path: paths.databaseQuery, screen: SqliteQueryConsole },
  { path: paths.databaseUsers, screen: SqliteUsers },
];
