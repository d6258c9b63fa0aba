import { useState } from 'preact/hooks';
import { call } from '../api.js';
import type { ScreenProps } from './screen.js';
import { Alert, Field, Secret, useAction, useLoad } from '../ui/kit.js';
import { SiteFrame, useSite } from './site-nav.js';
import './site.css';

interface Domain {
  hostname: string;
  status: 'active' | 'pending';
  verification?: { type: 'TXT'; name: string; value: string };
}

/**
 * Custom domains: attach (pending until its DNS TXT record is found, or at once when the
 * server's HOSTPLANE_DOMAIN_VERIFICATION is off), check now, detach.
 */
export function SiteDomains({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const base = `/api/v1/account/sites/${encodeURIComponent(siteId)}/domains`;
  const domains = useLoad(() => call<{ domains: Domain[] }>('GET', base).then((r) => r.domains), [base]);
  const site = useSite(siteId);
  const [hostname, setHostname] = useState('');
  const [status, setStatus] = useState<string>();
  const { busy, error, run } = useAction();

  const attach = async (event: Event) => {
    event.preventDefault();
    setStatus(undefined);
    const answer = await run(() => call<{ domain: Domain }>('POST', base, { json: { hostname } }));
    if (!answer) return;
    setHostname('');
    setStatus(
      answer.domain.status === 'active'
        ? `${answer.domain.hostname} is attached.`
        : `${answer.domain.hostname} is pending: create the TXT record below, then check it.`,
    );
    await domains.reload();
  };
  const verify = async (domain: Domain) => {
    setStatus(undefined);
    const path = `${base}/${encodeURIComponent(domain.hostname)}/verify`;
    const answer = await run(() => call<{ domain: Domain }>('POST', path));
    if (!answer) return;
    setStatus(`${domain.hostname} is verified and attached.`);
    await domains.reload();
  };
  const detach = async (domain: Domain) => {
    if (!confirm(`Detach ${domain.hostname}? It stops serving this site at once.`)) return;
    setStatus(undefined);
    const path = `${base}/${encodeURIComponent(domain.hostname)}`;
    const answer = await run(() => call<{ message: string }>('DELETE', path));
    if (!answer) return;
    setStatus(answer.message);
    await domains.reload();
  };

  const siteHost = site.data ? new URL(site.data.url).hostname : 'the site’s address';
  return (
    <SiteFrame siteId={siteId} title="Domains">
      <section class="card stack" aria-labelledby="attach-title">
        <h2 id="attach-title">Attach a domain</h2>
        <form class="row" onSubmit={attach}>
          <Field
            label="Domain"
            name="hostname"
            required
            value={hostname}
            placeholder="www.example.com"
            hint={`Then point it at ${siteHost} (a CNAME record).`}
            onInput={(e) => setHostname(e.currentTarget.value)}
          />
          <button type="submit" aria-disabled={busy}>
            Attach
          </button>
        </form>
      </section>
      <Alert error={error} />
      <Alert error={status} kind="success" />
      <Alert error={domains.error} />
      {domains.data?.length === 0 && <p>No custom domains: the site answers at its own address.</p>}
      <ul class="domain-list" aria-label="Domains">
        {domains.data?.map((domain) => (
          <li key={domain.hostname} class="card stack">
            <h2>
              {domain.status === 'active' ? (
                <a href={`https://${domain.hostname}/`} target="_blank" rel="noopener">
                  {domain.hostname}
                </a>
              ) : (
                domain.hostname
              )}{' '}
              <span class={`badge ${domain.status === 'active' ? 'badge-ok' : 'badge-pending'}`}>
                {domain.status === 'active' ? 'Active' : 'Pending verification'}
              </span>
            </h2>
            {domain.verification && (
              <div class="stack">
                <p>
                  Prove it is yours: create this DNS record at your DNS provider, then check it (DNS changes
                  can take a while to show).
                </p>
                <p>
                  Type: <strong>{domain.verification.type}</strong>
                </p>
                <Secret label={`Record name for ${domain.hostname}`} value={domain.verification.name} />
                <Secret label={`Record value for ${domain.hostname}`} value={domain.verification.value} />
              </div>
            )}
            <div class="row">
              {domain.status === 'pending' && (
                <button type="button" onClick={() => verify(domain)} aria-disabled={busy}>
                  Check now<span class="visually-hidden"> {domain.hostname}</span>
                </button>
              )}
              <button type="button" class="danger" onClick={() => detach(domain)} aria-disabled={busy}>
                Detach<span class="visually-hidden"> {domain.hostname}</span>
              </button>
            </div>
          </li>
        ))}
      </ul>
    </SiteFrame>
  );
}
