// The platform domain's public face: accounts and sessions, API keys, sites and routing, plans
// and usage. Other domains import from here only.
export { Platform, type PlatformOptions } from './service.js';
export type { Site, SiteUsage, Principal } from './types.js';
export type { UsageChange } from './usage.js';
export { newApiKey, TEMP_KEY_DEFAULT_SECONDS, TEMP_KEY_MAX_SECONDS, TEMP_KEY_MIN_SECONDS } from './keys.js';
export { ACCOUNT_SESSION_SECONDS, BROWSER_SESSION_SECONDS } from './sessions.js';
export {
  TOKEN_LIFETIME_MS,
  type AccountMail,
  type AccountMailer,
  type AccountTokenKind,
} from './accounts.js';
export type { AccountHooks, ExtraUsage } from './account-hooks.js';
export type { AccountApi } from './routes.js';
export { csrfTokenOf, sessionCookieFor } from './cookies.js';
export { recordName, type DomainVerification, type TxtLookup } from './domains.js';
export type { DomainRouting, RoutingResult, SiteRouting } from './routing.js';
export { planFor, plans, planTypes, type Plan, type PlanType } from './plans.js';
export { SLUG_MAX_LENGTH, SLUG_PATTERN, SLUG_RULE, isValidSlug } from './slug.js';
export { formatBytes, percentage } from './format.js';
export { SiteEvents, type SiteEventHandlers } from './site-events.js';
export type { EdgePresence } from './edge-presence.js';
export { platformModule } from './routes.js';
export { authenticators, unauthorized } from './auth.js';
export { siteForRequest } from './site-scope.js';
export { requireSudoForLastingCredential } from './sudo.js';
export type { CreatedSite, NewSite } from './sites.js';
export { hashSecret, newSecret, secretMatches } from './secrets.js';
