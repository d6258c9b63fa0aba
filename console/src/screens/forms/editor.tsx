import { useState } from 'preact/hooks';
import { call } from '../../api.js';
import { to } from '../../links.js';
import { navigate } from '../../router.js';
import type { ScreenProps } from '../screen.js';
import { useAccount } from '../../session.js';
import { Alert, Field, useAction, useLoad } from '../../ui/kit.js';
import { formPath, formsCall, type Form } from './api.js';
import { FieldsEditor } from './fields.js';
import { FormFrame, useForm } from './form-frame.js';
import { settingsBody, SettingsFields, settingsOf, type SettingsDraft } from './settings-fields.js';

/** One form: its settings, fields, state, notification address; delete. */
export function FormEditor({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const form = useForm(siteId, params.formId!);
  const { busy, error, run } = useAction();

  const toggle = async () => {
    await run(() => formsCall(siteId, 'POST', `${formPath(params.formId!)}/toggle`));
    await form.reload();
  };
  const remove = async () => {
    const name = form.data?.name ?? 'this form';
    if (!confirm(`Delete the form "${name}" and every submission it received? This cannot be undone.`))
      return;
    const ok = await run(() => formsCall(siteId, 'DELETE', formPath(params.formId!)));
    if (ok) navigate(to.forms(siteId));
  };
  const actions = form.data && (
    <>
      <button type="button" class="secondary" aria-disabled={busy} onClick={() => void toggle()}>
        {form.data.is_active ? 'Deactivate form' : 'Activate form'}
      </button>
      <button type="button" class="danger" aria-disabled={busy} onClick={() => void remove()}>
        Delete form
      </button>
    </>
  );

  return (
    <FormFrame siteId={siteId} form={form} section="fields and settings" actions={actions}>
      <Alert error={error} />
      {form.data && (
        <p class="form-state" role="status">
          {form.data.is_active
            ? 'Active: the form accepts submissions.'
            : 'Inactive: new submissions are refused until it is activated.'}
        </p>
      )}
      {form.data && <Settings siteId={siteId} form={form.data} onSaved={form.reload} />}
      {form.data && (
        <FieldsEditor key={form.data.id} siteId={siteId} formId={form.data.id} initial={form.data.fields} />
      )}
      {form.data && <Notification siteId={siteId} formId={form.data.id} />}
    </FormFrame>
  );
}

function Settings({ siteId, form, onSaved }: { siteId: string; form: Form; onSaved(): Promise<void> }) {
  const [settings, setSettings] = useState<SettingsDraft>(() => settingsOf(form));
  const [saved, setSaved] = useState(false);
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setSaved(false);
    const answer = await run(() =>
      formsCall(siteId, 'PUT', formPath(form.id), {
        json: settingsBody(settings),
      }),
    );
    if (answer === undefined) return;
    setSaved(true);
    await onSaved();
  };
  return (
    <section class="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form class="stack" onSubmit={submit}>
        <SettingsFields idPrefix="edit" draft={settings} onChange={setSettings} />
        <Alert error={error} />
        {saved && <Alert error="Settings saved." kind="success" />}
        <div>
          <button type="submit" aria-disabled={busy}>
            Save settings
          </button>
        </div>
      </form>
    </section>
  );
}

interface NotificationAnswer {
  notification_email: string | null;
  effective_email: string;
  notification_email_status: 'confirmed' | 'pending';
  notification_email_message: string;
}

/**
 * Where submissions are mailed: the owner's own address unless another is set (account API). A
 * new address waits for its owner to follow the mailed link; it can be mailed again (Resend).
 */
function Notification({ siteId, formId }: { siteId: string; formId: number }) {
  const path = `/api/v1/account/sites/${encodeURIComponent(siteId)}/forms/${formId}/notification`;
  const current = useLoad(() => call<NotificationAnswer>('GET', path), [path]);
  const { me } = useAccount();
  const [email, setEmail] = useState('');
  const [done, setDone] = useState<string>();
  const { busy, error, run } = useAction();
  const save = async (value: string | null) => {
    setDone(undefined);
    const answer = await run(() =>
      call<NotificationAnswer>('PUT', path, { json: { notification_email: value } }),
    );
    if (!answer) return;
    setEmail('');
    setDone(
      !me.mail
        ? `${answer.effective_email} is set; nothing is mailed while this server sends no mail.`
        : value === null
          ? 'Submissions go to your account email again.'
          : answer.notification_email_status === 'pending'
            ? `${answer.effective_email} is set: it gets submissions once its owner confirms.`
            : `Submissions now go to ${answer.effective_email}.`,
    );
    await current.reload();
  };
  const resend = async () => {
    setDone(undefined);
    const answer = await run(() =>
      formsCall<{ message: string; notification_email: string; notification_email_status: string }>(
        siteId,
        'POST',
        `${formPath(formId)}/notification-email/resend`,
      ),
    );
    if (!answer) return;
    setDone(
      answer.notification_email_status === 'pending'
        ? `A new link is on its way to ${answer.notification_email}; earlier links no longer work.`
        : answer.message,
    );
    await current.reload();
  };
  const pending = current.data?.notification_email_status === 'pending';
  return (
    <section class="card stack" aria-labelledby="notify-title">
      <h2 id="notify-title">Notification email</h2>
      <Alert error={current.error ?? error} />
      {current.data && !me.mail && (
        <p class="alert alert-info notify-effective notify-mail-off" role="status">
          This server sends no mail (its operator has not set it up): submissions are stored and listed here,
          not mailed to <strong>{current.data.effective_email}</strong>.
        </p>
      )}
      {current.data && me.mail && !pending && (
        <p>
          Each submission that is not spam is mailed to{' '}
          <strong class="notify-effective">{current.data.effective_email}</strong>
          {current.data.notification_email === null ? ' (your account email).' : ' (set for this form).'}
        </p>
      )}
      {current.data && me.mail && pending && (
        <div class="notify-pending stack">
          <p class="alert alert-info notify-effective" role="status">
            {current.data.notification_email_message}
          </p>
          <div>
            <button type="button" class="secondary" aria-disabled={busy} onClick={() => void resend()}>
              Resend the confirmation link
            </button>
          </div>
        </div>
      )}
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void save(email);
        }}
      >
        <Field
          label="Send submissions to"
          name="notify-email"
          type="email"
          required
          maxLength={254}
          autoComplete="email"
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <button type="submit" aria-disabled={busy}>
          Set address
        </button>
        {current.data?.notification_email !== null && current.data && (
          <button type="button" class="secondary" aria-disabled={busy} onClick={() => void save(null)}>
            Use my account email
          </button>
        )}
      </form>
      <Alert error={done} kind="success" />
    </section>
  );
}
