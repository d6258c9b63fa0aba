import { useState } from 'preact/hooks';
import type { ScreenProps } from '../../routes.js';
import { Alert, formatDate, useAction, useLoad } from '../../ui/kit.js';
import { SqliteFrame } from './frame.js';
import { InstallForm } from './install-form.js';
import { CONSOLE_TOKEN_NAME, listDatabases, listTokens, revokeToken, tokenState } from './sqlite-api.js';

/** The site's scoped tokens (active, revoked, expired) with their last use; create and revoke. */
export function SqliteTokens({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const tokens = useLoad(() => listTokens(siteId), [siteId]);
  const databases = useLoad(() => listDatabases(siteId), [siteId]);
  const revoke = useAction();
  const [done, setDone] = useState<string>();

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
      {tokens.data?.length === 0 && <p>No token yet: install a database first.</p>}
      {tokens.data && tokens.data.length > 0 && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Tokens">
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
              {tokens.data.map((token) => {
                const state = tokenState(token);
                return (
                  <tr key={token.id} data-token-id={token.id}>
                    <td>
                      {token.name}
                      {token.name.startsWith(CONSOLE_TOKEN_NAME) && (
                        <small class="hint"> (minted by this console for its own use)</small>
                      )}
                    </td>
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
                          disabled={revoke.busy}
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
      )}
      {databases.data && (
        <InstallForm
          siteId={siteId}
          paths={databases.data.databases.map((d) => d.path)}
          title="Create a token"
          submitLabel="Create token"
          onInstalled={async () => {
            await Promise.all([tokens.reload(), databases.reload()]);
          }}
        />
      )}
    </SqliteFrame>
  );
}
