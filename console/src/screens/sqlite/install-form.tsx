import { useState } from 'preact/hooks';
import { Alert, Field, Secret, useAction } from '../../ui/kit.js';
import { install, type Installed, type Permissions } from './sqlite-api.js';

/**
 * Install: a new database, or one more token for an existing one (`paths` offers those). The token
 * is shown once, with where it is accepted from.
 */
export function InstallForm({
  siteId,
  paths,
  title,
  submitLabel,
  onInstalled,
}: {
  siteId: number;
  paths: string[];
  title: string;
  submitLabel: string;
  onInstalled(): Promise<void> | void;
}) {
  const [path, setPath] = useState(paths[0] ?? 'data/app.sqlite');
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<Permissions>('readwrite');
  const [requireUserAuth, setRequireUserAuth] = useState(true);
  const [days, setDays] = useState('');
  const [installed, setInstalled] = useState<Installed>();
  const action = useAction();
  const id = title.toLowerCase().replace(/\W+/g, '-');

  const submit = async (event: Event) => {
    event.preventDefault();
    setInstalled(undefined);
    const done = await action.run(() =>
      install(siteId, {
        path: path.trim(),
        name: name.trim(),
        permissions,
        requireUserAuth,
        ...(days.trim() ? { expiresInDays: Number(days) } : {}),
      }),
    );
    if (done) {
      setInstalled(done);
      setName('');
      await onInstalled();
    }
  };

  return (
    <section class="card stack" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <form class="stack" onSubmit={submit}>
        <div class="row">
          <Field
            label="Database path"
            name={`${id}-path`}
            value={path}
            required
            list={paths.length > 0 ? `${id}-paths` : undefined}
            hint="Ends in .sqlite or .db; created when it does not exist."
            onInput={(e) => setPath(e.currentTarget.value)}
          />
          {paths.length > 0 && (
            <datalist id={`${id}-paths`}>
              {paths.map((p) => (
                <option key={p} value={p} />
              ))}
            </datalist>
          )}
          <Field
            label="Token name"
            name={`${id}-name`}
            value={name}
            required
            maxLength={120}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="row">
          <div class="field">
            <label for={`${id}-permissions`}>Permissions</label>
            <select
              id={`${id}-permissions`}
              value={permissions}
              onChange={(e) => setPermissions(e.currentTarget.value as Permissions)}
            >
              <option value="readwrite">Read and write</option>
              <option value="read">Read only</option>
            </select>
          </div>
          <Field
            label="Expires after (days)"
            name={`${id}-days`}
            type="number"
            min={1}
            max={3650}
            value={days}
            hint="Empty: never expires."
            onInput={(e) => setDays(e.currentTarget.value)}
          />
          <label class="check">
            <input
              id={`${id}-user-auth`}
              type="checkbox"
              checked={requireUserAuth}
              onChange={(e) => setRequireUserAuth(e.currentTarget.checked)}
            />{' '}
            Calls also need a signed-in end user
          </label>
        </div>
        <Alert error={action.error} />
        <div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Working…' : submitLabel}
          </button>
        </div>
      </form>
      {installed && (
        <div class="stack" role="status">
          <p>
            Token for <code>{installed.path}</code> created. It is shown only now: copy it. Pages of this site
            send it as <code>X-Sqlite-Token</code> from {installed.allowedOrigins.join(', ') || 'its origins'}
            .
          </p>
          <Secret label="Scoped token" value={installed.token} />
        </div>
      )}
    </section>
  );
}
