import type { ComponentChildren } from 'preact';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link, usePath } from '../router.js';
import { Alert, Page, useLoad } from '../ui/kit.js';
import type { Site } from './sites.js';

const TABS = [
  ['files', 'Files'],
  ['deploys', 'Deploys'],
  ['keys', 'API keys'],
  ['domains', 'Domains'],
  ['forms', 'Forms'],
  ['sqlite', 'SQLite'],
  ['settings', 'Settings'],
] as const;

/** Loads the site once per screen and frames it with the site's tabs. */
export function useSite(siteId: string) {
  return useLoad(
    () =>
      call<{ site: Site }>('GET', `/api/v1/account/sites/${encodeURIComponent(siteId)}`).then((r) => r.site),
    [siteId],
  );
}

export function SiteFrame({
  siteId,
  title,
  children,
  actions,
}: {
  siteId: string;
  title: string;
  children?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  const site = useSite(siteId);
  const path = usePath();
  const name = site.data?.name ?? '…';
  return (
    <Page title={`${name}: ${title}`} actions={actions}>
      <Alert error={site.error} />
      {site.data && (
        <p class="site-url">
          Live at{' '}
          <a href={site.data.url} target="_blank" rel="noopener">
            {site.data.url}
          </a>
        </p>
      )}
      <nav class="tabs" aria-label="Site sections">
        {TABS.map(([tab, label]) => {
          const href = to.siteTab(siteId, tab);
          const current =
            path === href || path.startsWith(href + '/') || (tab === 'files' && path === to.site(siteId));
          return (
            <Link key={tab} href={href} aria-current={current ? 'page' : undefined}>
              {label}
            </Link>
          );
        })}
      </nav>
      {children}
    </Page>
  );
}
