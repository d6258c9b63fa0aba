import { useState } from 'preact/hooks';
import type { ScreenProps } from '../screen.js';
import { to } from '../../links.js';
import { Link } from '../../router.js';
import { useAccount } from '../../session.js';
import { Alert, formatBytes, formatDate, UsageBar, useAction, useLoad } from '../../ui/kit.js';
import { SqliteFrame } from './frame.js';
import { RequiredMark } from './install-form.js';
import { createDatabase, listDatabases } from './sqlite-api.js';

const databasesWord = (n: number) => `${n} SQLite ${n === 1 ? 'database' : 'databases'}`;

/**
 * The site's SQLite databases: size against the cap, end users, tokens; a new one (apart from
 * any token), or, when the plan's count is reached, the limit and the way to the plans.
 */
export function SqliteDatabases({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const account = useAccount();
  const list = useLoad(() => listDatabases(siteId), [siteId]);
  const databases = list.data?.databases ?? [];
  const { used, limit } = account.me.usage.sqlite_databases;
  const full = limit !== null && used >= limit;
  // Said outside the form: the database just made may be the plan's last, and the form goes.
  const [created, setCreated] = useState<string>();
  return (
    <SqliteFrame siteId={params.siteId!} title="SQLite">
      <Alert error={list.error} />
      {list.data && (
        <p>
          {databases.length} {databases.length === 1 ? 'database' : 'databases'} on this site
          {list.data.maxDatabases !== null &&
            `; your plan allows ${databasesWord(list.data.maxDatabases)} across all your sites`}
          .
        </p>
      )}
      {list.data && databases.length === 0 && <p>No database yet{full ? '.' : ': create one below.'}</p>}
      <ul class="cards" aria-label="Databases">
        {databases.map((db) => (
          <li key={db.path} class="card stack database">
            <h2>
              <Link href={to.database(siteId, db.path, 'tables')}>{db.path}</Link>
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
              <Link href={to.database(siteId, db.path, 'tables')}>Tables</Link>
              <Link href={to.database(siteId, db.path, 'query')}>Query</Link>
              <Link href={to.database(siteId, db.path, 'users')}>End users</Link>
              <Link href={to.sqliteTokens(siteId, db.path)}>Create a token</Link>
            </p>
          </li>
        ))}
      </ul>
      {full ? (
        <p class="alert alert-info database-limit" role="status">
          Your {account.me.plan.name} plan allows {databasesWord(limit)} and your account has {used} (across
          all your sites), so no new one can be created here. <Link href={to.plans()}>See the plans</Link> for
          more room.
        </p>
      ) : (
        <CreateDatabase
          siteId={siteId}
          onCreated={async (path) => {
            setCreated(path);
            await Promise.all([list.reload(), account.reload()]);
          }}
        />
      )}
      {created && (
        <p class="alert alert-success" role="status">
          Database <code>{created}</code> created. Your pages reach it with a token:{' '}
          <Link href={to.sqliteTokens(siteId, created)}>create a token</Link>.
        </p>
      )}
    </SqliteFrame>
  );
}

/** A new database, and only that: tokens for the site's pages are made on the Tokens screen. */
function CreateDatabase({ siteId, onCreated }: { siteId: number; onCreated(path: string): Promise<void> }) {
  const [path, setPath] = useState('data/app.sqlite');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const made = await action.run(() => createDatabase(siteId, path.trim()));
    if (made) await onCreated(made);
  };
  return (
    <section class="card stack" aria-labelledby="create-database-title">
      <h2 id="create-database-title">Create a database</h2>
      <form class="row" onSubmit={submit}>
        <div class="field">
          <label for="field-database-path">
            Database path
            <RequiredMark />
          </label>
          <input
            id="field-database-path"
            name="database-path"
            required
            value={path}
            aria-describedby="field-database-path-hint"
            onInput={(e) => setPath(e.currentTarget.value)}
          />
          <small id="field-database-path-hint" class="hint">
            A file of the site, ending in .sqlite or .db (e.g. data/app.sqlite). It is never served as a file.
          </small>
        </div>
        <button type="submit" aria-disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create database'}
        </button>
      </form>
      <Alert error={action.error} />
    </section>
  );
}
