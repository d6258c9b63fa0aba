import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link, navigate } from '../router.js';
import type { ScreenProps } from './screen.js';
import { useAccount } from '../session.js';
import { Alert, formatDate, useAction, useLoad } from '../ui/kit.js';
import { SiteFrame, useSite } from './site-nav.js';
import './site.css';

/** The site's facts, and its deletion: confirmed by typing the slug, as it cannot be undone. */
export function SiteSettings({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const site = useSite(siteId);
  const account = useAccount();
  const [typed, setTyped] = useState('');
  const { busy, error, run } = useAction();
  const slug = site.data?.slug;
  // Every domain with its state: an attached one waiting for its DNS proof is not "none".
  const domains = useLoad(
    () =>
      call<{ domains: Array<{ hostname: string; status: 'active' | 'pending' }> }>(
        'GET',
        `/api/v1/account/sites/${encodeURIComponent(siteId)}/domains`,
      ).then((r) => r.domains),
    [siteId],
  );

  const remove = async (event: Event) => {
    event.preventDefault();
    if (!slug || typed.trim() !== slug) return;
    const answer = await run(() =>
      call<{ message: string }>('DELETE', `/api/v1/account/sites/${encodeURIComponent(siteId)}`),
    );
    if (!answer) return;
    await account.reload();
    navigate('/', { flash: `Site ${slug} deleted, with its files, keys, forms and databases.` });
  };

  return (
    <SiteFrame siteId={siteId} title="Settings">
      {site.data && (
        <section class="card" aria-labelledby="facts-title">
          <h2 id="facts-title">This site</h2>
          <dl class="facts">
            <dt>Subdomain (slug)</dt>
            <dd>
              <code>{site.data.slug}</code>
            </dd>
            <dt>Address</dt>
            <dd>
              <a href={site.data.url} target="_blank" rel="noopener">
                {site.data.url}
              </a>
            </dd>
            <dt>Created</dt>
            <dd>{formatDate(site.data.created_at)}</dd>
            <dt>Custom domains</dt>
            <dd class="domains-fact">
              {domains.data === undefined ? (
                site.data.custom_domains.join(', ') || '…'
              ) : domains.data.length === 0 ? (
                'none'
              ) : (
                <>
                  {domains.data.map((d, i) => (
                    <span key={d.hostname}>
                      {i > 0 && ', '}
                      {d.hostname}
                      {d.status === 'pending' && ' (pending: waiting for its DNS record)'}
                    </span>
                  ))}{' '}
                  · <Link href={to.siteDomains(siteId)}>Manage domains</Link>
                </>
              )}
            </dd>
          </dl>
        </section>
      )}
      {slug && (
        <section class="card stack danger-zone" aria-labelledby="delete-title">
          <h2 id="delete-title">Delete this site</h2>
          <p>
            Deletes the site with all its files, API keys, custom domains, forms with their submissions and
            SQLite databases. Its address stops answering at once. This cannot be undone.
          </p>
          <form class="row" onSubmit={remove}>
            <div class="field">
              <label for="field-confirm-slug">
                Type <code>{slug}</code> to confirm
              </label>
              <input
                id="field-confirm-slug"
                name="confirm-slug"
                autoComplete="off"
                spellcheck={false}
                value={typed}
                onInput={(e) => setTyped(e.currentTarget.value)}
              />
            </div>
            <button type="submit" class="danger" disabled={busy || typed.trim() !== slug}>
              {busy ? 'Deleting…' : 'Delete the site'}
            </button>
          </form>
          <Alert error={error} />
        </section>
      )}
    </SiteFrame>
  );
}
