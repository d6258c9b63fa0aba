import { useState } from 'preact/hooks';
import { call } from '../api.js';
import type { ScreenProps } from './screen.js';
import { Alert, formatDate, Secret, useAction, useLoad } from '../ui/kit.js';
import { deviceOf } from './account.js';
import { SiteFrame } from './site-nav.js';
import './site.css';

interface Key {
  id: number;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/**
 * The site's API keys: permanent ones (account API; shown once, revoked at once on every replica)
 * and temporary keys minted by a session for a chosen lifetime (spec 4.5), listed while they work.
 */
export function SiteKeys({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const base = `/api/v1/account/sites/${encodeURIComponent(siteId)}/keys`;
  const keys = useLoad(() => call<{ keys: Key[] }>('GET', base).then((r) => r.keys), [base]);
  const [created, setCreated] = useState<string>();
  const [status, setStatus] = useState<string>();
  const { busy, error, run } = useAction();

  const create = async () => {
    setStatus(undefined);
    const answer = await run(() => call<{ api_key: string }>('POST', base));
    if (!answer) return;
    setCreated(answer.api_key);
    await keys.reload();
  };
  const revoke = async (key: Key) => {
    if (!confirm(`Revoke the key ${key.prefix}…? Anything using it stops working at once.`)) return;
    setCreated(undefined);
    const answer = await run(() => call<{ message: string }>('DELETE', `${base}/${key.id}`));
    if (!answer) return;
    setStatus(`Key ${key.prefix}… revoked.`);
    await keys.reload();
  };

  return (
    <SiteFrame siteId={siteId} title="API keys">
      <section class="card stack" aria-labelledby="permanent-title">
        <h2 id="permanent-title">Permanent keys</h2>
        <p>
          A permanent key works on the public API (<code>X-API-Key</code>) for this site until you revoke it.
          It is shown once: only its first characters are kept to recognise it.
        </p>
        <div class="row">
          <button type="button" onClick={create} aria-disabled={busy}>
            Create a key
          </button>
        </div>
        <Alert error={error} />
        <Alert error={status} kind="success" />
        {created && (
          <div role="status" class="stack">
            <p>The new key is shown once: copy it now.</p>
            <Secret label="New API key" value={created} />
          </div>
        )}
        <Alert error={keys.error} />
        {keys.data?.length === 0 && <p>This site has no permanent keys.</p>}
        {!!keys.data?.length && (
          <div class="table-wrap">
            <table class="permanent-keys">
              <caption class="visually-hidden">Permanent keys</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((key) => (
                  <tr key={key.id}>
                    <td>
                      <code>{key.prefix}…</code>
                    </td>
                    <td>{formatDate(key.created_at)}</td>
                    <td>{key.last_used_at ? formatDate(key.last_used_at) : 'never'}</td>
                    <td>
                      <button
                        type="button"
                        class="danger small"
                        onClick={() => revoke(key)}
                        aria-disabled={busy}
                      >
                        Revoke<span class="visually-hidden"> {key.prefix}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <TemporaryKeys siteId={Number(siteId)} />
    </SiteFrame>
  );
}

const LIFETIMES = [
  [3600, '1 hour'],
  [86_400, '24 hours'],
] as const;

interface TemporaryKeyRow extends Key {
  expires_at: string;
  minted_by: {
    session_id: number;
    kind: 'browser' | 'bearer' | 'operator';
    user_agent: string | null;
    current: boolean;
  };
}

/** Who minted a temporary key: this browser, another browser or token (by device), or the operator. */
function mintedBy({ minted_by: by }: TemporaryKeyRow) {
  if (by.current) return <span class="badge badge-ok">This browser</span>;
  if (by.kind === 'operator') return 'Operator (admin session)';
  const kind = by.kind === 'browser' ? 'Browser' : 'API token';
  return by.user_agent ? `${kind}: ${deviceOf(by.user_agent)}` : kind;
}

/**
 * Temporary keys: mint one for a chosen lifetime (spec 4.5), and the site's live ones, each with
 * the session that minted it (it dies with that session), revocable at once. The console's own
 * keys (files, forms, SQLite) are among them, marked "This browser"; revoked, it mints another.
 */
function TemporaryKeys({ siteId }: { siteId: number }) {
  const base = `/api/v1/account/sites/${siteId}/temporary-keys`;
  const keys = useLoad(
    () => call<{ temporary_keys: TemporaryKeyRow[] }>('GET', base).then((r) => r.temporary_keys),
    [base],
  );
  const [lifetime, setLifetime] = useState<number>(3600);
  const [minted, setMinted] = useState<{ key: string; expiresAt: string }>();
  const [status, setStatus] = useState<string>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setStatus(undefined);
    const answer = await run(() =>
      call<{ temp_api_key: string; expires_at: string }>('POST', '/api/keys/generate-temp', {
        json: { storage_folder_id: siteId, expires_in: lifetime },
      }),
    );
    if (!answer) return;
    setMinted({ key: answer.temp_api_key, expiresAt: answer.expires_at });
    await keys.reload();
  };
  const revoke = async (key: TemporaryKeyRow) => {
    if (!confirm(`Revoke the temporary key ${key.prefix}…? Anything using it stops working at once.`)) return;
    setMinted(undefined);
    const answer = await run(() => call<{ message: string }>('DELETE', `${base}/${key.id}`));
    if (!answer) return;
    setStatus(`Temporary key ${key.prefix}… revoked.`);
    await keys.reload();
  };
  return (
    <section class="card stack" aria-labelledby="temp-title">
      <h2 id="temp-title">Temporary keys</h2>
      <p>
        For a script or an assistant you do not want to trust for long: it works like a permanent key, then
        stops by itself, and at once when the session that made it signs out.
      </p>
      <form class="row" onSubmit={submit}>
        <div class="field">
          <label for="field-lifetime">Valid for</label>
          <select
            id="field-lifetime"
            name="lifetime"
            value={String(lifetime)}
            onChange={(e) => setLifetime(Number(e.currentTarget.value))}
          >
            {LIFETIMES.map(([seconds, label]) => (
              <option key={seconds} value={String(seconds)}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" aria-disabled={busy}>
          Create a temporary key
        </button>
      </form>
      <Alert error={error} />
      <Alert error={status} kind="success" />
      {minted && (
        <div role="status" class="stack">
          <p>
            Shown once; it expires on <strong>{formatDate(minted.expiresAt)}</strong>.
          </p>
          <Secret label="Temporary API key" value={minted.key} />
        </div>
      )}
      <Alert error={keys.error} />
      {keys.data?.length === 0 && <p>No temporary key of this site works now.</p>}
      {!!keys.data?.length && (
        <div class="table-wrap">
          <table class="temporary-keys">
            <caption class="visually-hidden">Temporary keys that work now</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Minted by</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((key) => (
                <tr key={key.id}>
                  <td>
                    <code>{key.prefix}…</code>
                  </td>
                  <td>{mintedBy(key)}</td>
                  <td>{formatDate(key.created_at)}</td>
                  <td>{formatDate(key.expires_at)}</td>
                  <td>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => revoke(key)}
                      aria-disabled={busy}
                    >
                      Revoke<span class="visually-hidden"> temporary key {key.prefix}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
