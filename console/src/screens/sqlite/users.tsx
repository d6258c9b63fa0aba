import { useEffect, useRef, useState } from 'preact/hooks';
import type { ScreenProps } from '../screen.js';
import { Alert, Field, formatDate, useAction, useLoad } from '../../ui/kit.js';
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

  /** Runs a change of `email`'s user; says what happened (or what went wrong); true when done. */
  const change = async (email: string, what: string, run: () => Promise<unknown>) => {
    setDone(undefined);
    const ok = await action.run(async () => {
      await run();
      return true;
    });
    if (!ok) return false;
    setDone(`${email}: ${what}.`);
    setResetting(undefined);
    await users.reload();
    return true;
  };
  const patch = (user: EndUser, json: Partial<EndUser>, what: string) =>
    change(user.email, what, () =>
      databaseCall(db, 'PATCH', `/api/v1/sqlite/auth/users/${user.id}`, { owner: true, json }),
    );
  const remove = (user: EndUser) => {
    if (!confirm(`Delete the end user ${user.email}? Their sessions end; this cannot be undone.`)) return;
    void change(user.email, 'deleted', () =>
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
        <p>
          No end user yet. Add one below, or let pages of the site register them (POST
          /api/v1/sqlite/auth/register); the first one becomes the admin.
        </p>
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
                          change(user.email, 'password reset, signed out everywhere', () =>
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
      <AddUser
        onAdd={(json) =>
          change(json.email, 'registered', () =>
            databaseCall(db, 'POST', '/api/v1/sqlite/auth/register', { owner: true, json }),
          )
        }
        busy={action.busy}
      />
    </DatabaseFrame>
  );
}

/** Registers an end user with the master key (the pool's first one becomes its admin). */
function AddUser({
  onAdd,
  busy,
}: {
  onAdd(user: { email: string; password: string; displayName?: string }): Promise<boolean>;
  busy: boolean;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [displayName, setDisplayName] = useState('');
  return (
    <section class="card stack" aria-labelledby="add-user-title">
      <h2 id="add-user-title">Add an end user</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          const user = {
            email,
            password,
            ...(displayName.trim() ? { displayName: displayName.trim() } : {}),
          };
          void onAdd(user).then((added) => {
            if (!added) return;
            setEmail('');
            setPassword('');
            setDisplayName('');
          });
        }}
      >
        <Field
          label="Email"
          name="user-email"
          type="email"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <Field
          label="Password"
          name="user-password"
          type="password"
          autoComplete="new-password"
          minLength={8}
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <Field
          label="Display name (optional)"
          name="user-display-name"
          maxLength={120}
          value={displayName}
          onInput={(e) => setDisplayName(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Add user
        </button>
      </form>
    </section>
  );
}

function ResetPassword({
  user,
  busy,
  onReset,
}: {
  user: EndUser;
  busy: boolean;
  onReset(password: string): Promise<boolean>;
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
