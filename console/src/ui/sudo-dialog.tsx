import { useEffect, useRef, useState } from 'preact/hooks';
import { call, setSudoPrompt } from '../api.js';
import { Alert, Field, useAction } from './kit.js';

/**
 * Sudo mode's dialog: when the API answers SUDO_REQUIRED (deleting a site, creating a permanent
 * key, minting a SQLite token or end user with the console's temporary key), the owner confirms their password here and the action is tried again. A modal <dialog>:
 * the browser keeps the focus inside it, Escape cancels, and the focus goes back where it was.
 */
export function SudoDialog() {
  const dialog = useRef<HTMLDialogElement>(null);
  const answer = useRef<((confirmed: boolean) => void) | undefined>(undefined);
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const { busy, error, setError, run } = useAction();

  useEffect(() => {
    setSudoPrompt(
      () =>
        new Promise<boolean>((resolve) => {
          answer.current = resolve;
          setOpen(true);
        }),
    );
    return () => setSudoPrompt(undefined);
  }, []);
  useEffect(() => {
    if (open && !dialog.current?.open) dialog.current?.showModal();
  }, [open]);

  const finish = (confirmed: boolean) => {
    answer.current?.(confirmed);
    answer.current = undefined;
    setPassword('');
    setError(undefined);
    setOpen(false);
    if (dialog.current?.open) dialog.current.close();
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    const done = await run(() => call('POST', '/api/v1/account/sudo', { json: { password } }));
    if (done) finish(true);
  };

  return (
    <dialog
      ref={dialog}
      class="sudo-dialog"
      aria-labelledby="sudo-title"
      aria-describedby="sudo-why"
      onClose={() => answer.current && finish(false)}
    >
      <form onSubmit={submit} class="stack">
        <h2 id="sudo-title">Confirm your password</h2>
        <p id="sudo-why">
          This action needs your password again (at most every 15 minutes), so that a session someone else got
          hold of cannot do it alone.
        </p>
        <Alert error={error} />
        {open && (
          <Field
            label="Your password"
            name="sudo-password"
            type="password"
            autoComplete="current-password"
            required
            autoFocus
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        )}
        <div class="row">
          <button type="submit" aria-disabled={busy}>
            {busy ? 'Checking…' : 'Confirm'}
          </button>
          <button type="button" class="secondary" onClick={() => finish(false)}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}
