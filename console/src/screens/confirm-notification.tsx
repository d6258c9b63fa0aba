import { useState } from 'preact/hooks';
import { call, messageOf } from '../api.js';
import { Page } from '../ui/kit.js';
import { MissingToken } from './invite.js';
import { useMailedToken } from './mailed-token.js';

/**
 * The link mailed to a form's new notification address. Its reader is often not a Hostplane user:
 * no sign-in, and nothing happens until they press the button (a mail scanner that opens the link
 * confirms nothing). The token stays in the fragment, never in a server log.
 */
export function ConfirmNotification() {
  const token = useMailedToken();
  const [state, setState] = useState<{ busy: boolean; ok?: boolean; message?: string }>({ busy: false });
  const confirm = async () => {
    if (!token || state.busy) return;
    setState({ busy: true });
    try {
      const answer = await call<{ message: string }>('POST', '/api/v1/forms/notification-confirm', {
        json: { token },
      });
      setState({ busy: false, ok: true, message: answer.message });
    } catch (err) {
      setState({ busy: false, ok: false, message: messageOf(err) });
    }
  };
  const finished = state.ok !== undefined;
  return (
    <div class="narrow">
      <Page title="Confirm this address for form submissions">
        {!token && <MissingToken what="confirmation" />}
        {token && !finished && (
          <>
            <p>
              A Hostplane account asked to mail the submissions of one of its forms to this address. Confirm
              only if you want to receive them; otherwise close this page and nothing will be sent to you.
            </p>
            <p>
              <button type="button" aria-disabled={state.busy} onClick={() => void confirm()}>
                Confirm this address
              </button>
            </p>
          </>
        )}
        {finished && (
          <p
            class={`alert ${state.ok ? 'alert-success' : 'alert-error'}`}
            role={state.ok ? 'status' : 'alert'}
          >
            {state.message}
          </p>
        )}
      </Page>
    </div>
  );
}
