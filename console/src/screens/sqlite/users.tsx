import { useEffect, useRef, useState } from 'preact/hooks';
import type { ScreenProps } from '../../routes.js';
import { Alert, formatDate, useAction, useLoad } from '../../ui/kit.js';
import { DatabaseFrame } from './frame.js';
import { databaseCall, type EndUser } from './sqlite-api.js';

/**
 * A database's end users, managed with the site's master key (no end-user session needed):
 * role, disable/enable, a new password, delete. The server's guard rails (the last active admin)
 * answer in words.
 */
export function SqliteUsers({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const path = params.db!;
  const db = { siteId, path, mode: 'read' as const };
  const users = useLoad(
    () =>
      databaseCall<{ users: EndUser[] }>(db, 'GET', '/api/v1/sqlite/auth/users', { owner: true }).then(
        (r) => r.users,
      ),
    [siteId, path],
  );
  const action = useAction();
  const [done, setDone] = useState<string>();
  const [resetting, setResetting] = useState<number>();

  const change = async (user: EndUser, what: string, run: () => Promise<unknown>) => {
    setDone(undefined);
    const ok = await action.run(async () => {
      await run();
      return true;
    });
    if (ok) {
      setDone(`${user.email}: ${what}.`);
      setResetting(undefined);
      await users.reload();
    }
  };
  const patch = (user: EndUser, json: Partial<EndUser>, what: string) =>
    change(user, what, () =>
      databaseCall(db, 'PATCH', `/api/v1/sqlite/auth/users/${user.id}`, { owner: true, json }),
    );
  const remove = (user: EndUser) => {
    if (!confirm(`Delete the end user ${user.email}? Their sessions end; this cannot be undone.`)) return;
    void change(user, 'deleted', () =>
      databaseCall(db, 'DELETE', `/api/v1/sqlite/auth/users/${user.id}`, { owner: true }),
    );
  };
  const disable = (user: EndUser) => {
    if (!user.disabled && !confirm(`Disable ${user.email}? They are signed out and cannot sign in.`)) return;
    void patch(user, { disabled: !user.disabled }, user.disabled ? 'enabled' : 'disabled, signed out');
  };

  return (
    <DatabaseFrame siteId={params.siteId!} path={path} title="End users">
      <Alert error={users.error ?? action.error} />
      <Alert error={done} kind="success" />
      {users.data?.length === 0 && (
        <p>No end user yet. Pages of the site register them with POST /api/v1/sqlite/auth/register.</p>
      )}
      {users.data && users.data.length > 0 && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="End users">
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">State</th>
                <th scope="col">Last sign-in</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.data.map((user) => (
                <tr key={user.id} data-user={user.email}>
                  <td>
                    {user.email}
                    {user.displayName && <small class="hint"> ({user.displayName})</small>}
                  </td>
                  <td>
                    <label class="visually-hidden" for={`role-${user.id}`}>
                      Role of {user.email}
                    </label>
                    <select
                      id={`role-${user.id}`}
                      value={user.role}
                      disabled={action.busy}
                      onChange={(e) => {
                        const role = e.currentTarget.value as EndUser['role'];
                        void patch(user, { role }, `role is now ${role}`);
                      }}
                    >
                      <option value="user">user</option>
                      <option value="admin">admin</option>
                    </select>
                  </td>
                  <td>
                    <span class={`badge badge-${user.disabled ? 'revoked' : 'active'}`}>
                      {user.disabled ? 'disabled' : 'enabled'}
                    </span>
                  </td>
                  <td>{formatDate(user.lastLoginAt)}</td>
                  <td>{formatDate(user.createdAt)}</td>
                  <td>
                    <div class="actions">
                      <button
                        type="button"
                        class="secondary"
                        disabled={action.busy}
                        onClick={() => disable(user)}
                      >
                        {user.disabled ? 'Enable' : 'Disable'}
                        <span class="visually-hidden"> {user.email}</span>
                      </button>
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={resetting === user.id}
                        onClick={() => setResetting(resetting === user.id ? undefined : user.id)}
                      >
                        Reset password<span class="visually-hidden"> of {user.email}</span>
                      </button>
                      <button
                        type="button"
                        class="danger"
                        disabled={action.busy}
                        onClick={() => remove(user)}
                      >
                        Delete<span class="visually-hidden"> {user.email}</span>
                      </button>
                    </div>
                    {resetting === user.id && (
                      <ResetPassword
                        user={user}
                        busy={action.busy}
                        onReset={(newPassword) =>
                          change(user, 'password reset, signed out everywhere', () =>
                            databaseCall(db, 'POST', `/api/v1/sqlite/auth/users/${user.id}/reset-password`, {
                              owner: true,
                              json: { newPassword },
                            }),
                          )
                        }
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </DatabaseFrame>
  );
}

function ResetPassword({
  user,
  busy,
  onReset,
}: {
  user: EndUser;
  busy: boolean;
  onReset(password: string): Promise<void>;
}) {
  const [password, setPassword] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const id = `new-password-${user.id}`;
  return (
    <form
      class="row reset"
      onSubmit={(e) => {
        e.preventDefault();
        void onReset(password);
      }}
    >
      <div class="field">
        <label for={id}>New password for {user.email}</label>
        <input
          id={id}
          type="password"
          autoComplete="new-password"
          minLength={8}
          required
          value={password}
          ref={input}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </div>
      <button type="submit" disabled={busy}>
        Set password
      </button>
    </form>
  );
}
