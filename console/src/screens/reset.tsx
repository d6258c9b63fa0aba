import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link } from '../router.js';
import { Alert, Field, Page, useAction } from '../ui/kit.js';
import { MissingToken, PASSWORD_HINT } from './invite.js';
import { useMailedToken } from './mailed-token.js';

/** The reset mail's link: a new password; every session ends, then the owner signs in with it. */
export function ResetPassword() {
  const token = useMailedToken();
  const [password, setPassword] = useState('');
  const [done, setDone] = useState<string>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ message: string }>('POST', '/api/v1/account/password-reset/confirm', {
        json: { token, password },
      }),
    );
    if (answer) setDone(answer.message);
  };
  return (
    <div class="narrow">
      <Page title="Choose a new password">
        {!token && <MissingToken what="reset" />}
        {token && done && (
          <>
            <p class="alert alert-success" role="status">
              {done} Every other session of the account has ended.
            </p>
            <p>
              <Link href={to.signIn()}>Sign in</Link>
            </p>
          </>
        )}
        {token && !done && (
          <form onSubmit={submit} class="stack">
            <Alert error={error} />
            <Field
              label="New password"
              name="password"
              type="password"
              autoComplete="new-password"
              hint={PASSWORD_HINT}
              required
              minLength={8}
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
            <button type="submit" disabled={busy}>
              {busy ? 'Saving…' : 'Set the new password'}
            </button>
          </form>
        )}
      </Page>
    </div>
  );
}
