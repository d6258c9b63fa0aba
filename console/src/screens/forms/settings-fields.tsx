import { Field } from '../../ui/kit.js';
import { orNull, type Form } from './api.js';

/** A form's own settings as typed (blank optional texts mean "none"). */
export interface SettingsDraft {
  name: string;
  description: string;
  successMessage: string;
  redirectUrl: string;
}

export const settingsOf = (form?: Form): SettingsDraft => ({
  name: form?.name ?? '',
  description: form?.description ?? '',
  successMessage: form?.success_message ?? '',
  redirectUrl: form?.redirect_url ?? '',
});

/** The settings in the API's shape (create and update take the same four). */
export const settingsBody = (draft: SettingsDraft) => ({
  name: draft.name,
  description: orNull(draft.description),
  success_message: orNull(draft.successMessage),
  redirect_url: orNull(draft.redirectUrl),
});

/**
 * The four settings inputs, shared by "Create a form" and the editor. `idPrefix` keeps their ids
 * apart (`field-<prefix>-name`…) when both could be on one page; `hints` says what they do where
 * the form is new.
 */
export function SettingsFields({
  idPrefix,
  draft,
  hints = false,
  onChange,
}: {
  idPrefix: string;
  draft: SettingsDraft;
  hints?: boolean;
  onChange(next: SettingsDraft): void;
}) {
  const set = (key: keyof SettingsDraft) => (event: Event) =>
    onChange({ ...draft, [key]: (event.currentTarget as HTMLInputElement).value });
  return (
    <div class="grid">
      <Field
        label="Form name"
        name={`${idPrefix}-name`}
        required
        maxLength={120}
        value={draft.name}
        onInput={set('name')}
      />
      <Field
        label="Description"
        name={`${idPrefix}-description`}
        maxLength={1000}
        value={draft.description}
        onInput={set('description')}
      />
      <Field
        label="Success message"
        name={`${idPrefix}-success`}
        maxLength={1000}
        value={draft.successMessage}
        hint={hints ? 'Shown to the visitor after sending' : undefined}
        onInput={set('successMessage')}
      />
      <Field
        label="Redirect URL"
        name={`${idPrefix}-redirect`}
        type="url"
        maxLength={2048}
        value={draft.redirectUrl}
        hint={hints ? 'Optional: where a post without JavaScript goes afterwards' : undefined}
        onInput={set('redirectUrl')}
      />
    </div>
  );
}
