import { useState } from 'preact/hooks';
import { call, setCsrfToken } from '../api.js';
import { to } from '../links.js';
import { Link, navigate } from '../router.js';
import type { ScreenProps } from './screen.js';
import { Alert, Field, Page, useAction } from '../ui/kit.js';
import { useMailedToken } from './mailed-token.js';

export const PASSWORD_HINT =
  'At least 8 characters; common, repeated (aaaaaaaa) or sequential (abcdefgh) passwords and ones built on your email, your sites or the service’s name are refused.';

/** The operator's invitation: the new owner chooses a password and is signed in. */
export function AcceptInvite({ onSignedIn }: ScreenProps) {
  const token = useMailedToken();
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const done = await run(async () => {
      const answer = await call<{ csrf_token?: string }>('POST', '/api/v1/account/invitations/accept', {
        json: { token, password, session: 'cookie' },
      });
      setCsrfToken(answer.csrf_token);
      return true;
    });
    if (!done) return;
    await onSignedIn();
    navigate(to.sites(), { replace: true });
  };

  return (
    <div class="narrow">
      <Page title="Accept your invitation">
        {token ? (
          <form onSubmit={submit} class="stack">
            <p>Choose the password of your new Hostplane account.</p>
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
              {busy ? 'Setting it…' : 'Set my password and sign in'}
            </button>
          </form>
        ) : (
          <MissingToken what="invitation" />
        )}
      </Page>
    </div>
  );
}

/** A page opened without its mailed token (a link cut short by a mail program). */
export function MissingToken({ what }: { what: string }) {
  return (
    <p class="alert alert-error" role="alert">
      This {what} link is incomplete: open the whole link from the mail, or ask for a new one.{' '}
      <Link href={to.signIn()}>Sign in</Link>
    </p>
  );
}
