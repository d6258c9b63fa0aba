import type { FunctionComponent } from 'preact';
import { Account } from './screens/account.js';
import { ForgotPassword } from './screens/forgot.js';
import { AcceptInvite } from './screens/invite.js';
import { Plans } from './screens/plans.js';
import { ResetPassword } from './screens/reset.js';
import { SignIn } from './screens/sign-in.js';
import { SignUp } from './screens/sign-up.js';
import { SiteFiles } from './screens/site-files.js';
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
];

/** Screens of the signed-in console. */
export const signedInRoutes: Route[] = [
  { path: '/', screen: Sites },
  { path: '/plans', screen: Plans },
  { path: '/account', screen: Account },
  { path: '/sites/:siteId', screen: SiteFiles },
  { path: '/sites/:siteId/files', screen: SiteFiles },
];
