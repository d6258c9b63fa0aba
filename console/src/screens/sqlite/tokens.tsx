import { useState } from 'preact/hooks';
import { to } from '../../links.js';
import { Link, useQueryParam } from '../../router.js';
import type { ScreenProps } from '../screen.js';
import { Alert, formatDate, useAction, useLoad } from '../../ui/kit.js';
import { SqliteFrame } from './frame.js';
import { TokenForm } from './install-form.js';
import {
  CONSOLE_TOKEN_NAME,
  listDatabases,
  listTokens,
  revokeToken,
  tokenState,
  type TokenRecord,
} from './sqlite-api.js';

/** The site's scoped tokens (active, revoked, expired) with their last use; create and revoke. */
export function SqliteTokens({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const tokens = useLoad(() => listTokens(siteId), [siteId]);
  const databases = useLoad(() => listDatabases(siteId), [siteId]);
  const revoke = useAction();
  const all = tokens.data ?? [];
  const mine = all.filter((t) => t.name.startsWith(CONSOLE_TOKEN_NAME));
  const owned = all.filter((t) => !t.name.startsWith(CONSOLE_TOKEN_NAME));
  const [done, setDone] = useState<string>();
  const wanted = useQueryParam('db');

  const onRevoke = async (id: number, name: string) => {
    if (
      !confirm(`Revoke the token “${name}”? Pages that use it stop working at once; this cannot be undone.`)
    )
      return;
    setDone(undefined);
    const revoked = await revoke.run(() => revokeToken(siteId, id));
    if (revoked) {
      setDone(`Token “${name}” revoked.`);
      await tokens.reload();
    }
  };

  return (
    <SqliteFrame siteId={params.siteId!} title="SQLite tokens">
      <Alert error={tokens.error ?? revoke.error} />
      <Alert error={done} kind="success" />
      {tokens.data?.length === 0 && <p>No token yet.</p>}
      {owned.length > 0 && (
        <TokenTable tokens={owned} label="Tokens" busy={revoke.busy} onRevoke={onRevoke} />
      )}
      {mine.length > 0 && (
        <details class="console-tokens">
          <summary>
            Tokens this console minted for its own use (
            {mine.filter((t) => tokenState(t) === 'active').length} active)
          </summary>
          <p class="hint">
            Read-only unless you switched a query console to write; no end-user sign-in; they expire after a
            day and are revoked when you sign out.
          </p>
          <TokenTable tokens={mine} label="The console’s own tokens" busy={revoke.busy} onRevoke={onRevoke} />
        </details>
      )}
      {databases.data && databases.data.databases.length === 0 && (
        <p>
          A token is for a database: <Link href={to.sqlite(siteId)}>create a database</Link> first.
        </p>
      )}
      {databases.data && databases.data.databases.length > 0 && (
        <TokenForm
          siteId={siteId}
          paths={databases.data.databases.map((d) => d.path)}
          initialPath={wanted}
          onCreated={async () => {
            await Promise.all([tokens.reload(), databases.reload()]);
          }}
        />
      )}
    </SqliteFrame>
  );
}

function TokenTable({
  tokens,
  label,
  busy,
  onRevoke,
}: {
  tokens: TokenRecord[];
  label: string;
  busy: boolean;
  onRevoke(id: number, name: string): Promise<void>;
}) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={label}>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Database</th>
            <th scope="col">Access</th>
            <th scope="col">State</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => {
            const state = tokenState(token);
            return (
              <tr key={token.id} data-token-id={token.id}>
                <td>{token.name}</td>
                <td>
                  <code>{token.path}</code>
                </td>
                <td>
                  {token.permissions === 'read' ? 'Read only' : 'Read and write'}
                  {token.requiresUserAuth ? ', end user signs in' : ''}
                </td>
                <td>
                  <span class={`badge badge-${state}`}>{state}</span>
                </td>
                <td>{formatDate(token.lastUsedAt)}</td>
                <td>{token.expiresAt ? formatDate(token.expiresAt) : 'Never'}</td>
                <td>
                  {state === 'active' && (
                    <button
                      type="button"
                      class="danger"
                      disabled={busy}
                      aria-label={`Revoke ${token.name} (${token.path})`}
                      onClick={() => void onRevoke(token.id, token.name)}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
