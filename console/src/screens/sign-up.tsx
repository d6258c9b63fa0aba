import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link } from '../router.js';
import { Alert, Field, Page, useAction, useLoad } from '../ui/kit.js';
import { PASSWORD_HINT } from './invite.js';

/** What a signed-out visitor may know of this server: open sign-ups or not, and whether it sends mail. */
export interface ServerInfo {
  signup: 'open' | 'invite';
  mail: boolean;
}
export const loadServerInfo = () => call<ServerInfo>('GET', '/api/v1/account/signup-mode');
export const loadSignupMode = () => loadServerInfo().then((r) => r.signup);

/** Said wherever a mail would be promised on a server that sends none. */
export const MAIL_OFF =
  'This server sends no mail: its operator has not set it up, so no link or notification can reach you by mail.';

/** Open sign-up (HOSTPLANE_SIGNUP=open): an account, then a verification mail before sites. */
export function SignUp() {
  const info = useLoad(loadServerInfo, []);
  const mode = { ...info, data: info.data?.signup };
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
            {info.data?.mail
              ? `${sent} Follow it to confirm your address, then sign in and create your first site.`
              : `Your account is created, but ${MAIL_OFF.charAt(0).toLowerCase()}${MAIL_OFF.slice(1)} Your address stays unconfirmed, so you cannot create sites yet: ask the operator of this server to help.`}
          </p>
        )}
        {mode.data === 'open' && !sent && (
          <form onSubmit={submit} class="stack">
            {info.data?.mail === false && (
              <p class="alert alert-info" role="status">
                {MAIL_OFF} A new account cannot confirm its address here.
              </p>
            )}
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
          Already have an account? <Link href={to.signIn()}>Sign in</Link>
        </p>
      </Page>
    </div>
  );
}
