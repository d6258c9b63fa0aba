import { useEffect, useState } from 'preact/hooks';
import { call, messageOf } from '../api.js';
import { to } from '../links.js';
import { Link } from '../router.js';
import { Page } from '../ui/kit.js';
import { MissingToken } from './invite.js';
import { useMailedToken } from './mailed-token.js';

/** The verification mail's link: proves the address at once, then points on. */
export function VerifyEmail() {
  const token = useMailedToken();
  const [state, setState] = useState<{ done: boolean; ok?: boolean; message?: string }>({ done: false });
  useEffect(() => {
    if (!token) return;
    call<{ message: string }>('POST', '/api/v1/account/verify', { json: { token } }).then(
      (answer) => setState({ done: true, ok: true, message: answer.message }),
      (err: unknown) => setState({ done: true, ok: false, message: messageOf(err) }),
    );
  }, [token]);
  const failed = state.ok === false;
  return (
    <div class="narrow">
      <Page title="Confirm your email address">
        {!token && <MissingToken what="verification" />}
        {token && !state.done && (
          <p role="status" class="loading">
            Checking the link…
          </p>
        )}
        {state.done && (
          <p class={`alert ${failed ? 'alert-error' : 'alert-success'}`} role={failed ? 'alert' : 'status'}>
            {state.message}
          </p>
        )}
        {state.done && (
          <p>
            <Link href={to.sites()}>Go to your sites</Link>
          </p>
        )}
      </Page>
    </div>
  );
}
