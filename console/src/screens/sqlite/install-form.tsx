import { useState } from 'preact/hooks';
import { Alert, Field, Secret, useAction } from '../../ui/kit.js';
import { install, type Installed, type Permissions } from './sqlite-api.js';

/** A field the form cannot go without: marked for the eye, `required` for the browser and readers. */
export const RequiredMark = () => (
  <span class="required" aria-hidden="true">
    {' '}
    *
  </span>
);

/**
 * A token for the site's pages, for one of the site's databases (created apart, on the Databases
 * screen). Shown once, with where it is accepted from. Whether calls also need a signed-in end
 * user is a choice between two plain answers.
 */
export function TokenForm({
  siteId,
  paths,
  initialPath,
  onCreated,
}: {
  siteId: number;
  paths: string[];
  initialPath?: string;
  onCreated(): Promise<void> | void;
}) {
  const [path, setPath] = useState(
    initialPath && paths.includes(initialPath) ? initialPath : (paths[0] ?? ''),
  );
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<Permissions>('readwrite');
  const [requireUserAuth, setRequireUserAuth] = useState(false);
  const [days, setDays] = useState('');
  const [installed, setInstalled] = useState<Installed>();
  const action = useAction();
  const id = 'create-a-token';

  const submit = async (event: Event) => {
    event.preventDefault();
    setInstalled(undefined);
    const done = await action.run(() =>
      install(siteId, {
        path,
        name: name.trim(),
        permissions,
        requireUserAuth,
        ...(days.trim() ? { expiresInDays: Number(days) } : {}),
      }),
    );
    if (done) {
      setInstalled(done);
      setName('');
      await onCreated();
    }
  };

  return (
    <section class="card stack" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a token</h2>
      <p class="hint">
        Pages of this site send a token with each call to reach a database. Fields marked * are required.
      </p>
      <form class="stack" onSubmit={submit}>
        <div class="row">
          <div class="field">
            <label for={`${id}-path`}>
              Database
              <RequiredMark />
            </label>
            <select id={`${id}-path`} required value={path} onChange={(e) => setPath(e.currentTarget.value)}>
              {paths.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for={`field-${id}-name`}>
              Token name
              <RequiredMark />
            </label>
            <input
              id={`field-${id}-name`}
              name={`${id}-name`}
              value={name}
              required
              maxLength={120}
              aria-describedby={`field-${id}-name-hint`}
              onInput={(e) => setName(e.currentTarget.value)}
            />
            <small id={`field-${id}-name-hint`} class="hint">
              For you, to tell tokens apart (e.g. “guestbook page”).
            </small>
          </div>
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
        </div>
        <fieldset class="stack choice">
          <legend>Who can call with this token?</legend>
          <label class="check">
            <input
              type="radio"
              name={`${id}-who`}
              id={`${id}-anyone`}
              checked={!requireUserAuth}
              onChange={() => setRequireUserAuth(false)}
            />{' '}
            Any visitor of this site’s pages
          </label>
          <small class="hint">
            For data every visitor may see or add to, like a guestbook or a public list.
          </small>
          <label class="check">
            <input
              type="radio"
              name={`${id}-who`}
              id={`${id}-user-auth`}
              checked={requireUserAuth}
              onChange={() => setRequireUserAuth(true)}
            />{' '}
            Only visitors signed in as an end user of the database
          </label>
          <small class="hint">
            Your pages first sign the visitor in (an account in this database’s End users) and send that
            sign-in with each call; calls without it are refused. For data that belongs to someone.
          </small>
        </fieldset>
        <Alert error={action.error} />
        <div>
          <button type="submit" disabled={action.busy || paths.length === 0}>
            {action.busy ? 'Creating…' : 'Create token'}
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
