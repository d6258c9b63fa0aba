import { useState } from 'preact/hooks';
import { call, setCsrfToken } from '../api.js';
import { Link, navigate } from '../router.js';
import type { ScreenProps } from '../routes.js';
import { Alert, Field, Page, useAction } from '../ui/kit.js';

/** Where to go after signing in: a console path from `?next=`, never another origin. */
function nextPath(): string {
  const next = new URLSearchParams(location.search).get('next') ?? '/';
  return next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

export function SignIn({ onSignedIn }: ScreenProps) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const done = await run(async () => {
      const answer = await call<{ csrf_token?: string }>('POST', '/api/v1/account/sign-in', {
        json: { email, password, session: 'cookie' },
      });
      setCsrfToken(answer.csrf_token);
      return true;
    });
    if (!done) return;
    await onSignedIn();
    navigate(nextPath(), { replace: true });
  };

  return (
    <div class="narrow">
      <Page title="Sign in">
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
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          <button type="submit" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <p>
          <Link href="/forgot">Forgot your password?</Link>
        </p>
      </Page>
    </div>
  );
}
