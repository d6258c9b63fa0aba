// The console's addresses below /console (router.tsx adds the base): the patterns the route table
// matches and the builders every screen links with. Paths only, importing no other console module,
// so that a screen links to another without importing the route table (which imports every
// screen): main → routes → screens → links, and never back.

/** Every route's pattern, with `:name` segments. */
export const paths = {
  sites: '/',
  plans: '/plans',
  account: '/account',
  signIn: '/sign-in',
  invite: '/invite',
  verify: '/verify',
  forgot: '/forgot',
  reset: '/reset',
  signUp: '/sign-up',
  confirmNotification: '/confirm-notification',
  site: '/sites/:siteId',
  siteFiles: '/sites/:siteId/files',
  siteDeploys: '/sites/:siteId/deploys',
  siteKeys: '/sites/:siteId/keys',
  siteDomains: '/sites/:siteId/domains',
  siteSettings: '/sites/:siteId/settings',
  forms: '/sites/:siteId/forms',
  form: '/sites/:siteId/forms/:formId',
  formEmbed: '/sites/:siteId/forms/:formId/embed',
  formSubmissions: '/sites/:siteId/forms/:formId/submissions',
  sqlite: '/sites/:siteId/sqlite',
  sqliteTokens: '/sites/:siteId/sqlite/tokens',
  databaseTables: '/sites/:siteId/sqlite/:db/tables',
  databaseQuery: '/sites/:siteId/sqlite/:db/query',
  databaseUsers: '/sites/:siteId/sqlite/:db/users',
} as const;

/** The tabs of a site, in the order the site's frame shows them. */
export const SITE_TABS = ['files', 'deploys', 'keys', 'domains', 'forms', 'sqlite', 'settings'] as const;
export type SiteTab = (typeof SITE_TABS)[number];

/** The tabs of one SQLite database. */
export const DATABASE_TABS = ['tables', 'query', 'users'] as const;
export type DatabaseTab = (typeof DATABASE_TABS)[number];

type Id = number | string;

const SITE_TAB_PATHS: Record<SiteTab, string> = {
  files: paths.siteFiles,
  deploys: paths.siteDeploys,
  keys: paths.siteKeys,
  domains: paths.siteDomains,
  forms: paths.forms,
  sqlite: paths.sqlite,
  settings: paths.siteSettings,
};

const DATABASE_TAB_PATHS: Record<DatabaseTab, string> = {
  tables: paths.databaseTables,
  query: paths.databaseQuery,
  users: paths.databaseUsers,
};

/**
 * A pattern with its `:name` segments filled, each value encoded as one segment (a database path
 * may hold slashes), and a query of the values given (an empty one is left out).
 */
function fill(
  pattern: string,
  params: Record<string, Id>,
  query: Record<string, string | undefined> = {},
): string {
  const path = pattern.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for :${name} of ${pattern}`);
    return encodeURIComponent(String(value));
  });
  const search = Object.entries(query)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join('&');
  return search ? `${path}?${search}` : path;
}

/** The href of each screen: `<Link href={to.site(id)}>`, `navigate(to.forms(siteId))`. */
export const to = {
  sites: () => paths.sites,
  plans: () => paths.plans,
  account: () => paths.account,
  /** The sign-in screen; `next` is where it goes once signed in (a path below /console). */
  signIn: (next?: string) => fill(paths.signIn, {}, { next }),
  forgot: () => paths.forgot,
  signUp: () => paths.signUp,
  site: (siteId: Id) => fill(paths.site, { siteId }),
  siteTab: (siteId: Id, tab: SiteTab) => fill(SITE_TAB_PATHS[tab], { siteId }),
  /** The site's files, at its root or in one folder. */
  siteFiles: (siteId: Id, folder?: string) => fill(paths.siteFiles, { siteId }, { folder }),
  siteDeploys: (siteId: Id) => fill(paths.siteDeploys, { siteId }),
  siteKeys: (siteId: Id) => fill(paths.siteKeys, { siteId }),
  siteDomains: (siteId: Id) => fill(paths.siteDomains, { siteId }),
  forms: (siteId: Id) => fill(paths.forms, { siteId }),
  form: (siteId: Id, formId: Id) => fill(paths.form, { siteId, formId }),
  formEmbed: (siteId: Id, formId: Id) => fill(paths.formEmbed, { siteId, formId }),
  formSubmissions: (siteId: Id, formId: Id) => fill(paths.formSubmissions, { siteId, formId }),
  sqlite: (siteId: Id) => fill(paths.sqlite, { siteId }),
  /** The site's SQLite tokens, with a database picked for a new one. */
  sqliteTokens: (siteId: Id, db?: string) => fill(paths.sqliteTokens, { siteId }, { db }),
  database: (siteId: Id, db: string, tab: DatabaseTab) => fill(DATABASE_TAB_PATHS[tab], { siteId, db }),
};

/** `/sites/:id/files` against `/sites/4/files` → {id: '4'}; undefined when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const have = path.split('/');
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of want.entries()) {
    const value = have[i] ?? '';
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(value);
    else if (part !== value) return undefined;
  }
  return params;
}
