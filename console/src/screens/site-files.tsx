import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { siteCall } from '../api.js';
import { to } from '../links.js';
import { Link, useQueryParam } from '../router.js';
import type { ScreenProps } from './screen.js';
import { Alert, formatBytes, UsageBar, useLoad } from '../ui/kit.js';
import { CreateFolder, EntryActions, RenameForm } from './site-file-actions.js';
import type { Entry } from './site-entry.js';
import { listDatabases, type DatabaseRecord } from './sqlite/sqlite-api.js';
import { SiteFrame } from './site-nav.js';
import { UploadPanel } from './site-upload-panel.js';
import './site.css';

/** A listed entry (spec 2.1). */
interface ListPage {
  pagination: { total_pages: number; total_items: number };
  files: Entry[];
}

interface StorageLimits {
  usage: {
    files: { current: number; limit: number };
    storage: { current: number; limit: number };
  };
  /** Beyond the spec: what the deploys kept for rollback hold of their own. */
  rollback?: { current: number; limit: number | null; deploys: number };
}

/**
 * A SQLite database of the site: listed as a file with no URL (never served). It is read, written,
 * moved and deleted through the SQLite API only, so the browser shows it as a database.
 */
const isDatabase = (entry: Entry) => entry.type === 'file' && entry.url === null;

/** Pages of the list read at once after the first (the list is paged by 100 and has no folder filter). */
const PAGE_READERS = 4;

/**
 * Every entry of the site. The files list has no folder parameter (spec 4.2: pages of the whole
 * tree in depth order), so the browser reads all pages and shows one folder at a time from them.
 */
async function listAll(siteId: number): Promise<Entry[]> {
  const read = (page: number) =>
    siteCall<ListPage>(siteId, 'GET', '/api/v1/files/list', { query: { page, per_page: 100 } });
  const first = await read(1);
  const pages: Entry[][] = [first.files];
  let next = 2;
  const worker = async () => {
    while (next <= first.pagination.total_pages) {
      const page = next++;
      pages[page - 1] = (await read(page)).files;
    }
  };
  await Promise.all(Array.from({ length: PAGE_READERS }, worker));
  return pages.flat();
}

/** The folder shown, from `?folder=` (so back and forward, and the Files tab, move between folders). */
function useFolder(siteId: string): [string, (folder: string) => string] {
  const folder = (useQueryParam('folder') ?? '').replace(/^\/+|\/+$/g, '');
  const href = (folder: string) => to.siteFiles(siteId, folder);
  return [folder, href];
}

export function SiteFiles({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const [folder, folderHref] = useFolder(params.siteId!);
  const entries = useLoad(() => listAll(siteId), [siteId]);
  const limits = useLoad(
    () => siteCall<StorageLimits>(siteId, 'GET', '/api/v1/files/storage-limits'),
    [siteId],
  );
  // The databases' real sizes (the list says 0 B for them), read only when the site has one.
  const hasDatabase = (entries.data ?? []).some(isDatabase);
  const databases = useLoad(
    async () =>
      hasDatabase
        ? new Map((await listDatabases(siteId)).databases.map((db) => [db.path, db]))
        : new Map<string, DatabaseRecord>(),
    [siteId, hasDatabase],
  );
  const [renaming, setRenaming] = useState<Entry>();
  const [done, setDone] = useState<string>();
  const listHeading = useRef<HTMLHeadingElement>(null);

  const shown = useMemo(
    () => (entries.data ?? []).filter((e) => (e.parent ?? '') === folder),
    [entries.data, folder],
  );
  const known =
    !folder || !entries.data || entries.data.some((e) => e.type === 'folder' && e.path === folder);

  const refresh = async (message?: string, focusList = false) => {
    setDone(message);
    setRenaming(undefined);
    await Promise.all([entries.reload(), limits.reload()]);
    // After a rename or delete the row (and the focused button) is gone: focus the list instead.
    if (focusList) listHeading.current?.focus();
  };
  const cancelRename = (entry: Entry) => {
    setRenaming(undefined);
    // The form held the focus and is gone: back to the button that opened it.
    requestAnimationFrame(() =>
      document.querySelector<HTMLElement>(`tr[data-path="${CSS.escape(entry.path)}"] button`)?.focus(),
    );
  };
  const firstFolder = useRef(true);
  useEffect(() => {
    setRenaming(undefined);
    setDone(undefined);
    if (firstFolder.current) firstFolder.current = false;
    else listHeading.current?.focus();
  }, [folder]);

  const usage = limits.data?.usage;
  const rollback = limits.data?.rollback;
  return (
    <SiteFrame siteId={params.siteId!} title="Files">
      {usage && (
        <div class="grid">
          <UsageBar label="Files" used={usage.files.current} limit={usage.files.limit} />
          <UsageBar
            label="Storage"
            used={usage.storage.current}
            limit={usage.storage.limit}
            format={formatBytes}
          />
          {rollback && rollback.deploys > 0 && (
            <UsageBar
              label={`Kept for rollback (${rollback.deploys} earlier deploy${rollback.deploys === 1 ? '' : 's'})`}
              used={rollback.current}
              limit={rollback.limit}
              format={formatBytes}
            />
          )}
        </div>
      )}
      <Breadcrumbs folder={folder} href={folderHref} />
      <UploadPanel siteId={siteId} folder={folder} onUploaded={() => refresh()} />
      <CreateFolder
        siteId={siteId}
        folder={folder}
        onCreated={(path) => refresh(`Folder /${path} created.`)}
      />
      <Alert error={entries.error ?? limits.error} />
      <Alert error={done} kind="success" />
      {renaming && (
        <RenameForm
          siteId={siteId}
          entry={renaming}
          onCancel={() => cancelRename(renaming)}
          onRenamed={(message) => refresh(message, true)}
        />
      )}
      <section aria-labelledby="list-title">
        <h2 id="list-title" tabIndex={-1} ref={listHeading}>
          {folder ? `In /${folder}` : 'At the site’s root'}
          {entries.loading && <span class="hint"> (loading…)</span>}
        </h2>
        {!known && <Alert error={`There is no folder /${folder} on this site.`} />}
        {entries.data && known && shown.length === 0 && (
          <p>
            This folder is empty.
            {!folder &&
              ' Drop your built site folder (the one holding index.html) above to publish it as the site.'}
          </p>
        )}
        {shown.length > 0 && (
          <div class="table-wrap">
            <table class="files">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Size</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((entry) =>
                  isDatabase(entry) ? (
                    <DatabaseRow
                      key={entry.path}
                      siteId={siteId}
                      entry={entry}
                      record={databases.data?.get(entry.path)}
                    />
                  ) : (
                    <tr key={entry.path} data-path={entry.path}>
                      <td class="file-name">
                        {entry.type === 'folder' ? (
                          <Link href={folderHref(entry.path)}>{entry.name}/</Link>
                        ) : entry.url ? (
                          <a href={entry.url} target="_blank" rel="noopener">
                            {entry.name}
                          </a>
                        ) : (
                          entry.name
                        )}
                      </td>
                      <td>{kindOf(entry)}</td>
                      <td>{entry.type === 'folder' ? '—' : formatBytes(entry.size)}</td>
                      <td>
                        <EntryActions
                          siteId={siteId}
                          entry={entry}
                          onRename={() => setRenaming(entry)}
                          onDeleted={(message) => refresh(message, true)}
                        />
                      </td>
                    </tr>
                  ),
                )}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </SiteFrame>
  );
}

/** A database's row: its real size and a link to its SQLite screens; no rename, move or delete here. */
function DatabaseRow({ siteId, entry, record }: { siteId: number; entry: Entry; record?: DatabaseRecord }) {
  const href = to.database(siteId, entry.path, 'tables');
  return (
    <tr data-path={entry.path} class="database-row">
      <td class="file-name">
        <Link href={href}>{entry.name}</Link>
      </td>
      <td>SQLite database</td>
      <td>{record ? formatBytes(record.sizeBytes) : '—'}</td>
      <td>
        <Link href={href}>
          Open in SQLite<span class="visually-hidden"> {entry.name}</span>
        </Link>
        <div class="hint">Managed on its SQLite screens, not here.</div>
      </td>
    </tr>
  );
}

function Breadcrumbs({ folder, href }: { folder: string; href(folder: string): string }) {
  const parts = folder ? folder.split('/') : [];
  const crumbs = [{ label: 'Site root', path: '' }].concat(
    parts.map((name, i) => ({ label: name, path: parts.slice(0, i + 1).join('/') })),
  );
  return (
    <nav aria-label="Folder" class="breadcrumbs">
      <ol>
        {crumbs.map((crumb, i) => (
          <li key={crumb.path}>
            {i === crumbs.length - 1 ? (
              <span aria-current="location">{crumb.label}</span>
            ) : (
              <Link href={href(crumb.path)}>{crumb.label}</Link>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}

const KINDS: Record<string, string> = {
  html: 'Page',
  css: 'Stylesheet',
  js: 'Script',
  json: 'JSON',
  xml: 'XML',
  txt: 'Text',
  jpg: 'Image',
  jpeg: 'Image',
  png: 'Image',
  gif: 'Image',
  svg: 'Image',
  webp: 'Image',
  ico: 'Icon',
  pdf: 'PDF',
  woff: 'Font',
  woff2: 'Font',
  ttf: 'Font',
  otf: 'Font',
  mp4: 'Video',
  webm: 'Video',
  ogg: 'Video',
  mov: 'Video',
  sqlite: 'SQLite database',
  db: 'SQLite database',
};

function kindOf(entry: Entry): string {
  if (entry.type === 'folder') return 'Folder';
  const ext = /\.([^./]+)$/.exec(entry.name)?.[1]?.toLowerCase() ?? '';
  return `${KINDS[ext] ?? 'File'}${ext ? ` (.${ext})` : ''}`;
}
