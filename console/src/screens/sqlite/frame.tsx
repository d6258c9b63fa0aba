import type { ComponentChildren } from 'preact';
import { to } from '../../links.js';
import { Link, usePath } from '../../router.js';
import { SiteFrame } from '../site-nav.js';
import './sqlite.css';

/** The SQLite tab of a site: its databases and tokens, one link each. */
export function SqliteFrame({
  siteId,
  title,
  children,
}: {
  siteId: string;
  title: string;
  children?: ComponentChildren;
}) {
  const path = usePath();
  const links = [
    [to.sqlite(siteId), 'Databases'],
    [to.sqliteTokens(siteId), 'Tokens'],
  ] as const;
  return (
    <SiteFrame siteId={siteId} title={title}>
      <nav class="subnav" aria-label="SQLite">
        {links.map(([href, label]) => (
          <Link key={href} href={href} aria-current={path === href ? 'page' : undefined}>
            {label}
          </Link>
        ))}
      </nav>
      {children}
    </SiteFrame>
  );
}

/** One database of the site: its tables, a query console and its end users. */
export function DatabaseFrame({
  siteId,
  path: dbPath,
  title,
  children,
}: {
  siteId: string;
  path: string;
  title: string;
  children?: ComponentChildren;
}) {
  const path = usePath();
  const tabs = [
    ['tables', 'Tables'],
    ['query', 'Query'],
    ['users', 'End users'],
  ] as const;
  return (
    <SiteFrame siteId={siteId} title={`${title} · ${dbPath}`}>
      <p class="crumbs">
        <Link href={to.sqlite(siteId)}>SQLite databases</Link> › <code>{dbPath}</code>
      </p>
      <nav class="subnav" aria-label={`Database ${dbPath}`}>
        {tabs.map(([tab, label]) => {
          const href = to.database(siteId, dbPath, tab);
          return (
            <Link key={tab} href={href} aria-current={path === href ? 'page' : undefined}>
              {label}
            </Link>
          );
        })}
      </nav>
      {children}
    </SiteFrame>
  );
}
