import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link } from '../router.js';
import { Alert, Field, Page, useAction, useLoad } from '../ui/kit.js';
import { loadServerInfo, MAIL_OFF } from './sign-up.js';

/**
 * Asks for a reset link; the answer is the same whether or not the address has an account. A
 * server that sends no mail cannot send one: it says so instead of offering the form.
 */
export function ForgotPassword() {
  const info = useLoad(loadServerInfo, []);
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ message: string }>('POST', '/api/v1/account/password-reset', { json: { email } }),
    );
    if (answer) setSent(answer.message);
  };
  return (
    <div class="narrow">
      <Page title="Forgot your password?">
        <Alert error={info.error} />
        {info.data?.mail === false ? (
          <p class="alert alert-info" role="status">
            {MAIL_OFF} A reset link cannot be mailed: ask the operator of this server to help you back into
            your account.
          </p>
        ) : sent ? (
          <p class="alert alert-success" role="status">
            {sent} The link works once, for one hour.
          </p>
        ) : !info.data ? null : (
          <form onSubmit={submit} class="stack">
            <p>Enter your account’s email address: we mail you a link to choose a new password.</p>
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
            <button type="submit" disabled={busy}>
              {busy ? 'Sending…' : 'Mail me a link'}
            </button>
          </form>
        )}
        <p>
          <Link href={to.signIn()}>Back to sign-in</Link>
        </p>
      </Page>
    </div>
  );
}
