import { useState } from 'preact/hooks';
import { siteCall } from '../api.js';
import type { ScreenProps } from '../routes.js';
import { Alert, formatBytes, formatDate, useAction, useLoad } from '../ui/kit.js';
import { SiteFrame } from './site-nav.js';
import './site.css';

interface Deploy {
  id: string;
  state: 'uploading' | 'ready' | 'draft' | 'published';
  source: string;
  live: boolean;
  file_count: number;
  bytes: number;
  key_prefix: string | null;
  created_at: string;
  published_at: string | null;
  preview_url: string | null;
}

interface DeployList {
  live_changed_since_deploy: boolean;
  pagination: { current_page: number; total_pages: number; total_items: number };
  deploys: Deploy[];
}

const PER_PAGE = 20;

const STATES: Record<Deploy['state'], string> = {
  uploading: 'Uploading',
  ready: 'Ready',
  draft: 'Draft',
  published: 'Published',
};

/** The site's deploy history (README "Deploys"): publish a draft, restore an earlier deploy. */
export function SiteDeploys({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => siteCall<DeployList>(siteId, 'GET', '/api/v1/deploys', { query: { page, per_page: PER_PAGE } }),
    [siteId, page],
  );
  const [status, setStatus] = useState<string>();
  const { busy, error, run } = useAction();

  const switchTo = async (deploy: Deploy, action: 'publish' | 'restore') => {
    const question =
      action === 'publish'
        ? `Publish the draft ${deploy.id}? It replaces the live files.`
        : `Restore ${deploy.id} from ${formatDate(deploy.published_at ?? deploy.created_at)}? It replaces the live files.`;
    if (!confirm(question)) return;
    setStatus(undefined);
    const done = await run(() => siteCall<Deploy>(siteId, 'POST', `/api/v1/deploys/${deploy.id}/${action}`));
    if (!done) return;
    setStatus(`${done.id} is live (${done.file_count} files).`);
    await list.reload();
  };

  const data = list.data;
  return (
    <SiteFrame siteId={params.siteId!} title="Deploys">
      <p>
        Each deploy is a whole version of the site, sent by a client of the deploys API. The live files can be
        switched back to an earlier one at once.
      </p>
      {data?.live_changed_since_deploy && (
        <Alert
          kind="info"
          error="The live files changed through the file browser or the files API since the live deploy: the next publish or restore first keeps them as a deploy of their own."
        />
      )}
      <Alert error={list.error ?? error} />
      <Alert error={status} kind="success" />
      {data?.deploys.length === 0 && <p>No deploys yet.</p>}
      {!!data?.deploys.length && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Deploy</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
                <th scope="col">Files</th>
                <th scope="col">Size</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.deploys.map((deploy) => (
                <tr key={deploy.id}>
                  <td>
                    <code>{deploy.id}</code>
                    <div class="hint">
                      {deploy.source === 'files_api'
                        ? 'from the files API'
                        : deploy.key_prefix
                          ? `by key ${deploy.key_prefix}…`
                          : 'by a session'}
                    </div>
                  </td>
                  <td>
                    {deploy.live ? (
                      <span class="badge badge-ok">Live</span>
                    ) : (
                      <span class="badge badge-muted">{STATES[deploy.state]}</span>
                    )}
                  </td>
                  <td>{formatDate(deploy.created_at)}</td>
                  <td>{deploy.file_count}</td>
                  <td>{formatBytes(deploy.bytes)}</td>
                  <td>
                    <div class="entry-actions">
                      {deploy.preview_url && (deploy.state === 'draft' || deploy.state === 'published') && (
                        <a href={deploy.preview_url} target="_blank" rel="noopener">
                          Preview<span class="visually-hidden"> {deploy.id}</span>
                        </a>
                      )}
                      {deploy.state === 'draft' && (
                        <button
                          type="button"
                          class="small"
                          aria-disabled={busy}
                          onClick={() => switchTo(deploy, 'publish')}
                        >
                          Publish<span class="visually-hidden"> {deploy.id}</span>
                        </button>
                      )}
                      {deploy.state === 'published' && !deploy.live && (
                        <button
                          type="button"
                          class="secondary small"
                          aria-disabled={busy}
                          onClick={() => switchTo(deploy, 'restore')}
                        >
                          Restore<span class="visually-hidden"> {deploy.id}</span>
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data && data.pagination.total_pages > 1 && (
        <nav class="row" aria-label="Deploy pages">
          <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Newer
          </button>
          <span>
            Page {page} of {data.pagination.total_pages}
          </span>
          <button
            type="button"
            class="secondary"
            disabled={page >= data.pagination.total_pages}
            onClick={() => setPage(page + 1)}
          >
            Older
          </button>
        </nav>
      )}
    </SiteFrame>
  );
}
