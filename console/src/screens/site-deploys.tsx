import { useState } from 'preact/hooks';
import { siteCall } from '../api.js';
import { to } from '../links.js';
import { Link } from '../router.js';
import type { ScreenProps } from './screen.js';
import { Alert, formatBytes, formatDate, useAction, useLoad } from '../ui/kit.js';
import { SiteFrame } from './site-nav.js';
import './site.css';

interface Deploy {
  id: string;
  state: 'uploading' | 'ready' | 'draft' | 'published';
  source: 'api' | 'files_api';
  /** What made it (null: files_api records, and deploys from before it was recorded). */
  client: 'console' | 'cli' | 'mcp' | 'api' | null;
  live: boolean;
  file_count: number;
  bytes: number;
  key_prefix: string | null;
  created_at: string;
  finalized_at: string | null;
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

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const STEPS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 30],
  ['month', 12],
  ['year', Infinity],
];

/** "3 minutes ago", "yesterday": how long ago, in the browser's language. */
export function ago(iso: string, now = Date.now()): string {
  let value = (Date.parse(iso) - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(value) < size || unit === 'year') return RELATIVE.format(Math.round(value), unit);
    value /= size;
  }
  return RELATIVE.format(Math.round(value), 'year');
}

/** From created to finalized, in seconds (a deploy not finalized yet has none). */
const took = (d: Deploy) =>
  d.finalized_at
    ? `${Math.max(0, (Date.parse(d.finalized_at) - Date.parse(d.created_at)) / 1000).toFixed(1)} s`
    : '—';

/** Who made it, in words: the console, the CLI, MCP or another client, and the key when one did. */
function madeBy(d: Deploy): string {
  const key = d.key_prefix ? `, key ${d.key_prefix}…` : '';
  switch (d.client) {
    case 'console':
      return 'in the console';
    case 'cli':
      return `by hostplane deploy${key}`;
    case 'mcp':
      return `by an agent over MCP${key}`;
    case 'api':
      return d.key_prefix ? `through the API, key ${d.key_prefix}…` : 'through the API, signed in';
    default:
      if (d.source === 'files_api') return 'from file uploads and edits (the Files tab or the files API)';
      return d.key_prefix ? `by key ${d.key_prefix}…` : 'by a session';
  }
}

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
        : `Restore ${deploy.id} from ${formatDate(deploy.published_at ?? deploy.created_at)} (${ago(deploy.published_at ?? deploy.created_at)})? It replaces the live files; the current ones stay in this history.`;
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
        Each deploy is a whole version of the site. Preview one at its own address, publish a draft, or switch
        the live files back to an earlier deploy at once.
      </p>
      {data?.live_changed_since_deploy && (
        <Alert
          kind="info"
          error="The live files changed through the file browser or the files API since the live deploy: the next publish or restore first keeps them as a deploy of their own."
        />
      )}
      <Alert error={list.error ?? error} />
      <Alert error={status} kind="success" />
      {data?.deploys.length === 0 && <NoDeploys siteId={siteId} />}
      {!!data?.deploys.length && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Deploy</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
                <th scope="col">Took</th>
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
                    <div class="hint">{madeBy(deploy)}</div>
                  </td>
                  <td>
                    {deploy.live ? (
                      <span class="badge badge-ok">Live</span>
                    ) : (
                      <span class="badge badge-muted">{STATES[deploy.state]}</span>
                    )}
                  </td>
                  <td>
                    <time dateTime={deploy.created_at} title={formatDate(deploy.created_at)}>
                      {ago(deploy.created_at)}
                    </time>
                  </td>
                  <td>{took(deploy)}</td>
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

/** An empty history: the three ways to make a deploy. */
function NoDeploys({ siteId }: { siteId: number }) {
  return (
    <div class="card stack" data-testid="no-deploys">
      <h2>No deploys yet</h2>
      <p>A deploy publishes a whole version of the site in one step. Make the first one:</p>
      <ul>
        <li>
          In the console: drop your built site folder (the one holding index.html) on the{' '}
          <Link href={to.siteFiles(siteId)}>Files</Link> tab, or pick it with “Upload a folder”.
        </li>
        <li>
          From a terminal or CI: <code>hostplane deploy ./dist</code> with one of this site’s API keys in{' '}
          <code>HOSTPLANE_API_KEY</code> (<Link href={to.siteKeys(siteId)}>API keys</Link>).
        </li>
        <li>
          From an AI agent: the MCP tool <code>deploy_files</code> at <code>/mcp</code> with the same key.
        </li>
      </ul>
    </div>
  );
}
