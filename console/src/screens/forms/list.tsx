import { useState } from 'preact/hooks';
import { to } from '../../links.js';
import { Link, navigate } from '../../router.js';
import type { ScreenProps } from '../screen.js';
import { Alert, formatDate, UsageBar, useAction, useLoad } from '../../ui/kit.js';
import { SiteFrame } from '../site-nav.js';
import { formsCall, type Form, type FormSummary, type FormsUsage, type SubmissionPage } from './api.js';
import { emptyDraft, FieldInputs, inputOf, type FieldDraft } from './field-inputs.js';
import { settingsBody, SettingsFields, settingsOf, type SettingsDraft } from './settings-fields.js';
import './forms.css';

/** A form with its unread count (undefined until counted). */
type Listed = FormSummary & { unread?: number };

/** The site's forms, the account's forms usage, and a form to create one. */
export function FormsList({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const [unread, setUnread] = useState<Record<number, number>>({});
  const forms = useLoad(async () => {
    const { forms } = await formsCall<{ forms: FormSummary[] }>(siteId, 'GET', '/api/v1/forms');
    // Unread counts: one page-of-one per form (a plan allows at most 50 forms), after the list shows.
    void Promise.all(
      forms.map(async (form) => {
        const page = await formsCall<SubmissionPage>(siteId, 'GET', `/api/v1/forms/${form.id}/submissions`, {
          query: { per_page: 1 },
        });
        return [form.id, page.stats.unread] as const;
      }),
    )
      .then((counts) => setUnread(Object.fromEntries(counts)))
      .catch(() => undefined);
    return forms;
  }, [siteId]);
  const usage = useLoad(
    () => formsCall<FormsUsage>(siteId, 'GET', '/api/v1/forms/usage'),
    [siteId, forms.data?.length],
  );
  const listed: Listed[] | undefined = forms.data?.map((f) => ({ ...f, unread: unread[f.id] }));

  return (
    <SiteFrame siteId={siteId} title="Forms">
      <Alert error={forms.error ?? usage.error} />
      {usage.data && (
        <section class="card" aria-labelledby="forms-usage-title">
          <h2 id="forms-usage-title">Forms usage on the {usage.data.plan} plan</h2>
          <div class="grid">
            <UsageBar
              label="Forms (whole account)"
              used={usage.data.forms.used}
              limit={usage.data.forms.limit}
            />
            <UsageBar
              label={`Submissions in ${monthName(usage.data.submissions.month)}`}
              used={usage.data.submissions.used}
              limit={usage.data.submissions.limit}
            />
          </div>
          <p class="hint">
            The monthly count starts again on {formatDate(usage.data.submissions.resets_at)}. Spam is kept but
            not counted.
          </p>
        </section>
      )}
      <section aria-labelledby="forms-title" class="stack">
        <h2 id="forms-title">Forms of this site</h2>
        {listed?.length === 0 && <p>No forms yet: create one below.</p>}
        {listed && listed.length > 0 && (
          <div class="table-wrap forms-table">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col">Submissions</th>
                  <th scope="col">Unread</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {listed.map((form) => (
                  <tr key={form.id}>
                    <td>
                      <Link href={to.form(siteId, form.id)}>{form.name}</Link>
                    </td>
                    <td>{form.is_active ? 'Active' : 'Inactive'}</td>
                    <td>
                      <Link href={to.formSubmissions(siteId, form.id)}>
                        {form.submission_count}
                        <span class="visually-hidden"> submissions of {form.name}</span>
                      </Link>
                    </td>
                    <td>{form.unread === undefined ? '…' : form.unread}</td>
                    <td>{formatDate(form.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <CreateForm siteId={siteId} />
    </SiteFrame>
  );
}

function CreateForm({ siteId }: { siteId: string }) {
  const [settings, setSettings] = useState<SettingsDraft>(settingsOf());
  const [fields, setFields] = useState<FieldDraft[]>([
    { ...emptyDraft(), name: 'email', label: 'Email', type: 'email', required: true },
  ]);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() =>
      formsCall<{ form: Form }>(siteId, 'POST', '/api/v1/forms', {
        json: {
          ...settingsBody(settings),
          fields: fields.map(inputOf),
        },
      }),
    );
    if (answer) navigate(to.form(siteId, answer.form.id));
  };
  const change = (i: number, next: FieldDraft) => setFields(fields.map((f, j) => (j === i ? next : f)));
  const add = () => {
    setFields([...fields, emptyDraft()]);
    // Focus the new field's first input, so a keyboard user carries on there.
    requestAnimationFrame(() => document.getElementById(`field-new-${fields.length}-label`)?.focus());
  };

  return (
    <section aria-labelledby="create-form-title" class="card">
      <h2 id="create-form-title">Create a form</h2>
      <form onSubmit={submit} class="stack">
        <SettingsFields idPrefix="form" draft={settings} hints onChange={setSettings} />
        <fieldset class="stack">
          <legend>Fields</legend>
          {fields.map((draft, i) => (
            <div key={i} class="field-draft" role="group" aria-label={`Field ${i + 1}`}>
              <FieldInputs idPrefix={`new-${i}`} draft={draft} onChange={(next) => change(i, next)} />
              {fields.length > 1 && (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setFields(fields.filter((_, j) => j !== i))}
                >
                  Remove field {i + 1}
                </button>
              )}
            </div>
          ))}
          <div>
            <button type="button" class="secondary" onClick={add}>
              Add another field
            </button>
          </div>
        </fieldset>
        <Alert error={error} />
        <div>
          <button type="submit" aria-disabled={busy}>
            {busy ? 'Creating…' : 'Create form'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** "2026-11" → "November 2026" (the API's month, a calendar month in UTC). */
export function monthName(month: string): string {
  const date = new Date(`${month}-01T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return month;
  return date.toLocaleString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}
