import { useState } from 'preact/hooks';
import { call, setCsrfToken } from '../api.js';
import { to } from '../links.js';
import { Link, navigate, takeFlash } from '../router.js';
import type { ScreenProps } from './screen.js';
import { Alert, Field, Page, useAction, useLoad } from '../ui/kit.js';
import { loadSignupMode } from './sign-up.js';

/** Where to go after signing in: a console path from `?next=`, never another origin. */
function nextPath(): string {
  const next = new URLSearchParams(location.search).get('next') ?? '/';
  return next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

type SignInAnswer = { csrf_token?: string; second_factor?: 'totp'; challenge?: string };

export function SignIn({ onSignedIn }: ScreenProps) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [challenge, setChallenge] = useState<string>();
  const { busy, error, run } = useAction();
  const mode = useLoad(loadSignupMode, []);
  const [flash] = useState(takeFlash);

  const finish = async (answer: SignInAnswer) => {
    setCsrfToken(answer.csrf_token);
    await onSignedIn();
    navigate(nextPath(), { replace: true });
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<SignInAnswer>('POST', '/api/v1/account/sign-in', {
        json: { email, password, session: 'cookie' },
      }),
    );
    if (!answer) return;
    if (answer.second_factor === 'totp' && answer.challenge) {
      setPassword('');
      setChallenge(answer.challenge);
      return;
    }
    await finish(answer);
  };

  if (challenge)
    return <SecondStep challenge={challenge} onDone={finish} onRestart={() => setChallenge(undefined)} />;
  return (
    <div class="narrow">
      <Page title="Sign in">
        <Alert error={flash} kind="success" />
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
          <Link href={to.forgot()}>Forgot your password?</Link>
        </p>
        {mode.data === 'open' && (
          <p>
            New here? <Link href={to.signUp()}>Create an account</Link>
          </p>
        )}
      </Page>
    </div>
  );
}

/** The second step of a sign-in with TOTP: a current code, or one of the recovery codes. */
function SecondStep(props: { challenge: string; onDone(a: SignInAnswer): Promise<void>; onRestart(): void }) {
  const [recovery, setRecovery] = useState(false);
  const [value, setValue] = useState('');
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<SignInAnswer>('POST', '/api/v1/account/sign-in/totp', {
        json: { challenge: props.challenge, ...(recovery ? { recovery_code: value } : { code: value }) },
      }),
    );
    if (answer) await props.onDone(answer);
  };
  const expired = (error as { code?: string } | undefined)?.code === 'INVALID_CHALLENGE';
  return (
    <div class="narrow">
      <Page title="Two-factor sign-in">
        <form onSubmit={submit} class="stack">
          <p>
            {recovery
              ? 'Enter one of your recovery codes. Each works once.'
              : 'Enter the 6-digit code your authenticator app shows for Hostplane.'}
          </p>
          <Alert error={error} />
          {recovery ? (
            <Field
              key="recovery"
              label="Recovery code"
              name="recovery-code"
              autoComplete="off"
              required
              value={value}
              onInput={(e) => setValue(e.currentTarget.value)}
            />
          ) : (
            <Field
              key="code"
              label="Code"
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9 ]*"
              required
              value={value}
              onInput={(e) => setValue(e.currentTarget.value)}
            />
          )}
          <button type="submit" disabled={busy}>
            {busy ? 'Checking…' : 'Continue'}
          </button>
        </form>
        <p>
          <button
            type="button"
            class="link"
            onClick={() => {
              setRecovery(!recovery);
              setValue('');
            }}
          >
            {recovery ? 'Use a code from the app instead' : 'Use a recovery code instead'}
          </button>
        </p>
        {expired && (
          <p>
            <button type="button" class="link" onClick={props.onRestart}>
              Start again
            </button>
          </p>
        )}
      </Page>
    </div>
  );
}
