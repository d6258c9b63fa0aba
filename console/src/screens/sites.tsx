import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { to } from '../links.js';
import { Link, takeFlash } from '../router.js';
import { useAccount } from '../session.js';
import { Alert, Field, formatBytes, Page, Secret, UsageBar, useAction, useLoad } from '../ui/kit.js';

interface Limited {
  used: number;
  limit: number | null;
}
export interface Site {
  id: number;
  slug: string;
  name: string;
  url: string;
  created_at: string;
  files: Limited;
  storage_bytes: Limited;
  custom_domains: string[];
}

export function Sites() {
  const account = useAccount();
  const sites = useLoad(
    () => call<{ sites: Site[] }>('GET', '/api/v1/account/sites').then((r) => r.sites),
    [],
  );
  const { usage } = account.me;
  const [flash] = useState(takeFlash);
  return (
    <Page title="Your sites">
      <Alert error={flash} kind="success" />
      <Alert error={sites.error} />
      <section aria-labelledby="usage-title" class="card">
        <h2 id="usage-title">Usage on the {account.me.plan.name} plan</h2>
        <div class="grid">
          <UsageBar label="Forms" used={usage.forms.used} limit={usage.forms.limit} />
          <UsageBar
            label="Submissions this month"
            used={usage.submissions_this_month.used}
            limit={usage.submissions_this_month.limit}
          />
          <UsageBar
            label="SQLite databases"
            used={usage.sqlite_databases.used}
            limit={usage.sqlite_databases.limit}
          />
          <UsageBar
            label="Largest SQLite database"
            used={usage.sqlite_database_bytes.largest}
            limit={usage.sqlite_database_bytes.limit}
            format={formatBytes}
          />
        </div>
        <p>
          <Link href={to.plans()}>Compare plans</Link>
        </p>
      </section>
      <CreateSite
        onCreated={async () => {
          await sites.reload();
          await account.reload();
        }}
      />
      {sites.data?.length === 0 && <p>No sites yet: create your first one above.</p>}
      <ul class="cards" aria-label="Sites">
        {sites.data?.map((site) => (
          <li key={site.id} class="card">
            <h2>
              <Link href={to.site(site.id)}>{site.name}</Link>
            </h2>
            <p>
              <a href={site.url} target="_blank" rel="noopener">
                {site.url}
              </a>
            </p>
            <UsageBar label="Files" used={site.files.used} limit={site.files.limit} />
            <UsageBar
              label="Storage"
              used={site.storage_bytes.used}
              limit={site.storage_bytes.limit}
              format={formatBytes}
            />
          </li>
        ))}
      </ul>
    </Page>
  );
}

function CreateSite({ onCreated }: { onCreated(): Promise<void> }) {
  const [slug, setSlug] = useState('');
  const [created, setCreated] = useState<{ id: number; slug: string; key: string }>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      call<{ site: Site; api_key: string }>('POST', '/api/v1/account/sites', { json: { slug } }),
    );
    if (!answer) return;
    setCreated({ id: answer.site.id, slug: answer.site.slug, key: answer.api_key });
    setSlug('');
    await onCreated();
  };
  return (
    <section aria-labelledby="create-title" class="card">
      <h2 id="create-title">Create a site</h2>
      <form onSubmit={submit} class="row">
        <Field
          label="Subdomain"
          name="slug"
          required
          value={slug}
          hint="Lower-case letters, digits and single hyphens (no “--”)"
          onInput={(e) => setSlug(e.currentTarget.value)}
        />
        <button type="submit" aria-disabled={busy}>
          {busy ? 'Creating…' : 'Create site'}
        </button>
      </form>
      <Alert error={error} />
      {created && (
        <div role="status">
          <p>
            Site <strong>{created.slug}</strong> created. Its first API key is shown once: keep it somewhere
            safe.
          </p>
          <Secret label="API key" value={created.key} />
          <p class="next-step">
            Next, put it online: <Link href={to.siteFiles(created.id)}>upload your site</Link> (drop the built
            folder that holds index.html; it becomes the site in one deploy).
          </p>
        </div>
      )}
    </section>
  );
}
