import { useEffect, useRef, useState } from 'preact/hooks';
import { siteCall } from '../api.js';
import { Alert, useAction } from '../ui/kit.js';
import type { Entry } from './site-entry.js';

/** A new folder inside the current one (spec 4.3 create-folder). */
export function CreateFolder({
  siteId,
  folder,
  onCreated,
}: {
  siteId: number;
  folder: string;
  onCreated(path: string): Promise<void>;
}) {
  const [name, setName] = useState('');
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const path = (folder ? `${folder}/` : '') + name.trim().replace(/^\/+|\/+$/g, '');
    const answer = await run(() =>
      siteCall<{ path: string }>(siteId, 'POST', '/api/v1/files/create-folder', { json: { path } }),
    );
    if (!answer) return;
    setName('');
    await onCreated(answer.path);
  };
  return (
    <form class="row create-folder" onSubmit={submit} aria-label="Create a folder">
      <div class="field">
        <label for="field-new-folder">New folder</label>
        <input
          id="field-new-folder"
          name="new-folder"
          required
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </div>
      <button type="submit" class="secondary" aria-disabled={busy}>
        {busy ? 'Creating…' : 'Create folder'}
      </button>
      <Alert error={error} />
    </form>
  );
}

/** A row's buttons: rename or move (opens the form), delete (confirmed, permanent: spec 4.2). */
export function EntryActions({
  siteId,
  entry,
  onRename,
  onDeleted,
}: {
  siteId: number;
  entry: Entry;
  onRename(): void;
  onDeleted(message: string): Promise<void>;
}) {
  const { busy, error, run } = useAction();
  const folder = entry.type === 'folder';
  const remove = async () => {
    const what = folder ? `the folder /${entry.path} and everything in it` : `/${entry.path}`;
    if (!confirm(`Delete ${what}? This cannot be undone.`)) return;
    const answer = await run(() =>
      siteCall<{ message: string }>(
        siteId,
        'DELETE',
        folder ? '/api/v1/files/delete-folder' : '/api/v1/files/delete',
        { query: { path: entry.path } },
      ),
    );
    if (answer) await onDeleted(answer.message);
  };
  return (
    <div class="entry-actions">
      <button type="button" class="secondary small" onClick={onRename}>
        Rename or move<span class="visually-hidden"> {entry.name}</span>
      </button>
      <button type="button" class="danger small" onClick={remove} aria-disabled={busy}>
        Delete<span class="visually-hidden"> {entry.name}</span>
      </button>
      <Alert error={error} />
    </div>
  );
}

/**
 * Rename or move: the entry's whole path is editable, so a new folder part moves it (missing
 * folders are created by the API). Files go through rename, folders through rename-folder.
 */
export function RenameForm({
  siteId,
  entry,
  onCancel,
  onRenamed,
}: {
  siteId: number;
  entry: Entry;
  onCancel(): void;
  onRenamed(message: string): Promise<void>;
}) {
  const [target, setTarget] = useState(entry.path);
  const { busy, error, run } = useAction();
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    // The name without its extension selected: what one usually changes.
    const dot = entry.type === 'file' ? entry.path.lastIndexOf('.') : -1;
    input.current?.setSelectionRange(entry.path.lastIndexOf('/') + 1, dot > 0 ? dot : entry.path.length);
  }, [entry]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const newPath = target.trim().replace(/^\/+|\/+$/g, '');
    const answer = await run(() =>
      siteCall<{ message: string }>(
        siteId,
        'POST',
        entry.type === 'folder' ? '/api/v1/files/rename-folder' : '/api/v1/files/rename',
        { json: { old_path: entry.path, new_path: newPath } },
      ),
    );
    if (answer) await onRenamed(answer.message);
  };
  return (
    <form class="card stack" onSubmit={submit} aria-labelledby="rename-title">
      <h2 id="rename-title">
        Rename or move /{entry.path}
        {entry.type === 'folder' ? ' (with everything in it)' : ''}
      </h2>
      <div class="field">
        <label for="field-new-path">New path from the site’s root</label>
        <input
          id="field-new-path"
          name="new-path"
          ref={input}
          required
          value={target}
          aria-describedby="field-new-path-hint"
          onInput={(e) => setTarget(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Escape' && onCancel()}
        />
        <small id="field-new-path-hint" class="hint">
          Change the folder part to move it (e.g. archive/{entry.name}); missing folders are created. Its
          public address changes.
        </small>
      </div>
      <div class="row">
        <button type="submit" aria-disabled={busy}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <Alert error={error} />
    </form>
  );
}
