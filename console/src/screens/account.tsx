import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { useAccount } from '../session.js';
import { Alert, Field, formatDate, Page, useAction, useLoad } from '../ui/kit.js';
import { PASSWORD_HINT } from './invite.js';
import { TwoFactor } from './totp-setup.js';
import './account.css';

interface SessionRow {
  id: number;
  kind: 'bearer' | 'browser';
  user_agent: string | null;
  created_at: string;
  last_used_at: string | null;
  expires_at: string;
  current: boolean;
}

/** "Chrome on Linux" from a user agent: enough to recognise a device (the full string is long). */
export function deviceOf(userAgent: string | null): string {
  if (!userAgent) return '—';
  const browser =
    [
      ['Edg/', 'Edge'],
      ['Firefox/', 'Firefox'],
      ['Chrome/', 'Chrome'],
      ['Safari/', 'Safari'],
      ['curl/', 'curl'],
      ['node', 'Node.js'],
    ].find(([mark]) => userAgent.includes(mark!))?.[1] ?? userAgent.split(/[/ ]/)[0]!.slice(0, 30);
  const system = [
    ['Android', 'Android'],
    ['iPhone', 'iPhone'],
    ['iPad', 'iPad'],
    ['Windows', 'Windows'],
    ['Mac OS', 'macOS'],
    ['Linux', 'Linux'],
  ].find(([mark]) => userAgent.includes(mark!))?.[1];
  return system ? `${browser} on ${system}` : browser;
}

/** The owner's account: address, password, sessions and two-factor sign-in. */
export function Account() {
  return (
    <Page title="Your account">
      <EmailCard />
      <PasswordCard />
      <TwoFactor />
      <SessionsCard />
    </Page>
  );
}

function EmailCard() {
  const { me } = useAccount();
  const [sent, setSent] = useState<string>();
  const { busy, error, run } = useAction();
  const resend = async () => {
    const answer = await run(() => call<{ message: string }>('POST', '/api/v1/account/verify/resend'));
    if (answer) setSent(answer.message);
  };
  return (
    <section class="card stack" aria-labelledby="email-title">
      <h2 id="email-title">Email address</h2>
      <p>
        <strong>{me.email}</strong>{' '}
        <span class={`badge ${me.email_verified ? 'badge-ok' : 'badge-warn'}`}>
          {me.email_verified ? 'Verified' : 'Not verified yet'}
        </span>
      </p>
      {!me.email_verified && !me.mail && (
        <p class="alert alert-info" role="status">
          This server sends no mail (its operator has not set it up), so no verification link can reach you.
          Ask the operator of this server to confirm your address.
        </p>
      )}
      {!me.email_verified && me.mail && (
        <>
          <p>Follow the link we mailed you to create sites. Lost it? We send a new one.</p>
          <Alert error={error} />
          <Alert error={sent} kind="success" />
          <div>
            <button type="button" class="secondary" disabled={busy} onClick={resend}>
              Mail me a new link
            </button>
          </div>
        </>
      )}
    </section>
  );
}

function PasswordCard() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [done, setDone] = useState<string>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setDone(undefined);
    const answer = await run(() =>
      call<{ message: string }>('POST', '/api/v1/account/password', {
        json: { current_password: current, new_password: next },
      }),
    );
    if (!answer) return;
    setCurrent('');
    setNext('');
    setDone(answer.message);
  };
  return (
    <section class="card" aria-labelledby="password-title">
      <h2 id="password-title">Change your password</h2>
      <form onSubmit={submit} class="stack">
        <p class="hint">
          Every other session of your account ends (other browsers, CLI tokens); this one stays.
        </p>
        <Alert error={error} />
        <Alert error={done} kind="success" />
        <Field
          label="Current password"
          name="current-password"
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onInput={(e) => setCurrent(e.currentTarget.value)}
        />
        <Field
          label="New password"
          name="new-password"
          type="password"
          autoComplete="new-password"
          hint={PASSWORD_HINT}
          required
          minLength={8}
          value={next}
          onInput={(e) => setNext(e.currentTarget.value)}
        />
        <div>
          <button type="submit" disabled={busy}>
            {busy ? 'Changing…' : 'Change the password'}
          </button>
        </div>
      </form>
    </section>
  );
}

function SessionsCard() {
  const sessions = useLoad(
    () => call<{ sessions: SessionRow[] }>('GET', '/api/v1/account/sessions').then((r) => r.sessions),
    [],
  );
  const { error, run } = useAction();
  const [ended, setEnded] = useState<string>();
  const account = useAccount();
  const end = async (session: SessionRow) => {
    if (session.current) {
      if (confirm('This signs you out here. Continue?')) await account.signOut();
      return;
    }
    if (!confirm('End this session? It stops working at once.')) return;
    const ok = await run(async () => {
      await call('DELETE', `/api/v1/account/sessions/${session.id}`);
      return true;
    });
    if (!ok) return;
    setEnded(`Session ${session.id} ended.`);
    await sessions.reload();
    document.getElementById('sessions-title')?.focus();
  };
  return (
    <section class="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title" tabIndex={-1}>
        Sessions
      </h2>
      <Alert error={sessions.error ?? error} />
      <Alert error={ended} kind="success" />
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Your signed-in browsers and API tokens</caption>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Device</th>
              <th scope="col" class="wide-only">
                Signed in
              </th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(sessions.data ?? []).map((session) => (
              <tr key={session.id} class={session.current ? 'current-session' : undefined}>
                <td>
                  {session.kind === 'browser' ? 'Browser' : 'API token'}
                  {session.current && <span class="badge badge-ok">This session</span>}
                </td>
                <td>{deviceOf(session.user_agent)}</td>
                <td class="wide-only">{formatDate(session.created_at)}</td>
                <td>{formatDate(session.last_used_at)}</td>
                <td>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Sign out session ${session.id}${session.current ? ' (this one)' : ''}`}
                    onClick={() => void end(session)}
                  >
                    Sign out
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
