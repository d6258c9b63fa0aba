import { useMemo, useState } from 'preact/hooks';
import { encode } from 'uqr';
import { call } from '../api.js';
import { Alert, Field, useAction, useLoad } from '../ui/kit.js';

interface TotpState {
  enabled: boolean;
  recovery_codes_left: number;
}

/** The otpauth URI as a QR code: one SVG path of the dark modules (attributes only, no inline style). */
function QrCode({ text }: { text: string }) {
  const { size, d } = useMemo(() => {
    const qr = encode(text, { ecc: 'M', border: 2 });
    let path = '';
    qr.data.forEach((row, y) =>
      row.forEach((dark, x) => {
        if (dark) path += `M${x} ${y}h1v1h-1z`;
      }),
    );
    return { size: qr.size, d: path };
  }, [text]);
  return (
    <svg
      class="qr"
      viewBox={`0 0 ${size} ${size}`}
      role="img"
      aria-label="QR code of the two-factor secret, for an authenticator app"
      shape-rendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}

/** Recovery codes, shown once: copy or download them as a .txt file. */
function RecoveryCodes({ codes }: { codes: string[] }) {
  const text = `Hostplane recovery codes (each works once)\n\n${codes.join('\n')}\n`;
  const href = useMemo(() => URL.createObjectURL(new Blob([text], { type: 'text/plain' })), [text]);
  const [copied, setCopied] = useState(false);
  return (
    <div class="stack" role="region" aria-labelledby="recovery-title">
      <h3 id="recovery-title" tabIndex={-1}>
        Your recovery codes
      </h3>
      <p class="alert alert-info">
        Keep them somewhere safe: each signs you in once if you lose your phone. They are shown only now.
      </p>
      <ol class="recovery-codes">
        {codes.map((code) => (
          <li key={code}>{code}</li>
        ))}
      </ol>
      <div class="row">
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            await navigator.clipboard?.writeText(text).catch(() => undefined);
            setCopied(true);
          }}
        >
          {copied ? 'Copied' : 'Copy the codes'}
        </button>
        <a class="button secondary" href={href} download="hostplane-recovery-codes.txt">
          Download as .txt
        </a>
      </div>
    </div>
  );
}

/** Two-factor sign-in: set up (QR + secret, confirm a code), show the recovery codes once, turn off. */
export function TwoFactor() {
  const state = useLoad(() => call<TotpState>('GET', '/api/v1/account/totp'), []);
  const [setup, setSetup] = useState<{ secret: string; otpauth_uri: string }>();
  const [codes, setCodes] = useState<string[]>();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [done, setDone] = useState<string>();
  const { busy, error, run } = useAction();

  const focusSoon = (id: string) => setTimeout(() => document.getElementById(id)?.focus(), 0);
  const begin = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ secret: string; otpauth_uri: string }>('POST', '/api/v1/account/totp/setup', {
        json: { password },
      }),
    );
    if (!answer) return;
    setPassword('');
    setSetup(answer);
    focusSoon('totp-scan');
  };
  const confirmCode = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ recovery_codes: string[] }>('POST', '/api/v1/account/totp/confirm', { json: { code } }),
    );
    if (!answer) return;
    setSetup(undefined);
    setCode('');
    setCodes(answer.recovery_codes);
    setDone('Two-factor sign-in is on: every sign-in now asks for a code.');
    await state.reload();
    focusSoon('recovery-title');
  };
  const proven = (action: 'disable' | 'recovery-codes') => async (event: Event) => {
    event.preventDefault();
    if (action === 'disable' && !confirm('Turn two-factor sign-in off?')) return;
    const answer = await run(() =>
      call<{ recovery_codes?: string[]; message?: string }>('POST', `/api/v1/account/totp/${action}`, {
        json: { password, ...(/^[\d\s]+$/.test(code) ? { code } : { recovery_code: code }) },
      }),
    );
    if (!answer) return;
    setPassword('');
    setCode('');
    setCodes(answer.recovery_codes);
    setDone(answer.recovery_codes ? 'New recovery codes: the earlier ones no longer work.' : answer.message);
    await state.reload();
    if (answer.recovery_codes) focusSoon('recovery-title');
  };

  const passwordField = (
    <Field
      label="Your password"
      name="totp-password"
      type="password"
      autoComplete="current-password"
      required
      value={password}
      onInput={(e) => setPassword(e.currentTarget.value)}
    />
  );
  const codeField = (label: string, hint?: string) => (
    <Field
      label={label}
      name="totp-code"
      autoComplete="one-time-code"
      hint={hint}
      required
      value={code}
      onInput={(e) => setCode(e.currentTarget.value)}
    />
  );

  return (
    <section class="card stack" aria-labelledby="totp-title">
      <h2 id="totp-title">Two-factor sign-in</h2>
      <Alert error={state.error ?? error} />
      <Alert error={done} kind="success" />
      {codes && <RecoveryCodes codes={codes} />}
      {state.data && !state.data.enabled && !setup && (
        <form onSubmit={begin} class="stack">
          <p>
            Off. With it on, signing in also asks for a code from an authenticator app on your phone (any TOTP
            app).
          </p>
          {passwordField}
          <div>
            <button type="submit" disabled={busy}>
              Set up two-factor sign-in
            </button>
          </div>
        </form>
      )}
      {setup && (
        <form onSubmit={confirmCode} class="stack">
          <h3 id="totp-scan" tabIndex={-1}>
            Scan this code with your authenticator app
          </h3>
          <QrCode text={setup.otpauth_uri} />
          <p>
            Or enter this secret by hand: <code class="totp-secret">{setup.secret}</code>
          </p>
          {codeField('The 6-digit code the app shows')}
          <div>
            <button type="submit" disabled={busy}>
              Turn on
            </button>
          </div>
        </form>
      )}
      {state.data?.enabled && (
        <form class="stack" onSubmit={proven('recovery-codes')}>
          <p>
            <span class="badge badge-ok">On</span> {state.data.recovery_codes_left} recovery codes left.
          </p>
          {passwordField}
          {codeField(
            'A code from the app, or a recovery code',
            'Needed to turn it off or to make new recovery codes.',
          )}
          <div class="row">
            <button type="submit" class="secondary" disabled={busy}>
              New recovery codes
            </button>
            <button type="button" class="danger" disabled={busy} onClick={proven('disable')}>
              Turn off
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
