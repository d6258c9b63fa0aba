import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { Link } from '../router.js';
import { Alert, Field, Page, useAction, useLoad } from '../ui/kit.js';
import { PASSWORD_HINT } from './invite.js';

/** Fetches whether this server takes open sign-ups (signed-out visitors may ask). */
export const loadSignupMode = () =>
  call<{ signup: 'open' | 'invite' }>('GET', '/api/v1/account/signup-mode').then((r) => r.signup);

/** Open sign-up (HOSTPLANE_SIGNUP=open): an account, then a verification mail before sites. */
export function SignUp() {
  const mode = useLoad(loadSignupMode, []);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [sent, setSent] = useState<string>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ message: string }>('POST', '/api/v1/account/sign-up', { json: { email, password } }),
    );
    if (answer) setSent(answer.message);
  };
  return (
    <div class="narrow">
      <Page title="Create an account">
        <Alert error={mode.error} />
        {mode.data === 'invite' && (
          <p class="alert alert-info" role="status">
            Accounts on this server come by invitation: ask its operator for one.
          </p>
        )}
        {mode.data === 'open' && sent && (
          <p class="alert alert-success" role="status">
            {sent} Follow it to confirm your address, then sign in and create your first site.
          </p>
        )}
        {mode.data === 'open' && !sent && (
          <form onSubmit={submit} class="stack">
            <Alert error={error} />
            <Field
              label="Email"
              name="email"
              type="email"
              autoComplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
            <Field
              label="Password"
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
              {busy ? 'Creating…' : 'Create my account'}
            </button>
          </form>
        )}
        <p>
          Already have an account? <Link href="/sign-in">Sign in</Link>
        </p>
      </Page>
    </div>
  );
}
