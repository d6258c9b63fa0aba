import type { ScreenProps } from '../../routes.js';
import { Link } from '../../router.js';
import { Alert, formatBytes, formatDate, UsageBar, useLoad } from '../../ui/kit.js';
import { SqliteFrame } from './frame.js';
import { InstallForm } from './install-form.js';
import { databaseHref, listDatabases } from './sqlite-api.js';

/** The site's SQLite databases: size against the cap, end users, tokens; install a new one. */
export function SqliteDatabases({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const list = useLoad(() => listDatabases(siteId), [siteId]);
  const databases = list.data?.databases ?? [];
  return (
    <SqliteFrame siteId={params.siteId!} title="SQLite">
      <Alert error={list.error} />
      {list.data && (
        <p>
          {databases.length} {databases.length === 1 ? 'database' : 'databases'} on this site
          {list.data.maxDatabases !== null &&
            `; your plan allows ${list.data.maxDatabases} across all your sites`}
          .
        </p>
      )}
      {list.data && databases.length === 0 && <p>No database yet: install one below.</p>}
      <ul class="cards" aria-label="Databases">
        {databases.map((db) => (
          <li key={db.path} class="card stack database">
            <h2>
              <Link href={databaseHref(siteId, db.path, 'tables')}>{db.path}</Link>
            </h2>
            <UsageBar label="Size" used={db.sizeBytes} limit={db.maxSizeBytes} format={formatBytes} />
            <UsageBar label="End users" used={db.users} limit={db.maxUsers} />
            <dl class="facts">
              <dt>Version</dt>
              <dd>{db.version}</dd>
              <dt>Active tokens</dt>
              <dd>{db.activeTokens}</dd>
              <dt>Created</dt>
              <dd>{formatDate(db.createdAt)}</dd>
            </dl>
            <p class="links">
              <Link href={databaseHref(siteId, db.path, 'tables')}>Tables</Link>
              <Link href={databaseHref(siteId, db.path, 'query')}>Query</Link>
              <Link href={databaseHref(siteId, db.path, 'users')}>End users</Link>
            </p>
          </li>
        ))}
      </ul>
      <InstallForm
        siteId={siteId}
        paths={[]}
        title="Install a database"
        submitLabel="Install"
        onInstalled={list.reload}
      />
    </SqliteFrame>
  );
}
