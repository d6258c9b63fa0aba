import type { ScreenProps } from '../screen.js';
import { Alert, Secret, useLoad } from '../../ui/kit.js';
import { formPath, formsCall } from './api.js';
import { FormFrame, useForm } from './form-frame.js';

const KINDS = [
  ['html', 'HTML', 'Paste into a page of the site: a plain form that also works without JavaScript.'],
  ['react', 'React', 'A component that renders the form and submits it with fetch.'],
  ['curl', 'curl', 'A shell command that posts a valid submission: for a quick test.'],
] as const;

/** The form's embed snippets, as the API builds them from the form as it is now. */
export function FormEmbed({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const form = useForm(siteId, params.formId!);
  const snippets = useLoad(
    () =>
      Promise.all(
        KINDS.map(([kind]) =>
          formsCall<{ snippet: string }>(siteId, 'GET', `${formPath(params.formId!)}/embed/${kind}`).then(
            (r) => r.snippet,
          ),
        ),
      ),
    [siteId, params.formId],
  );
  return (
    <FormFrame siteId={siteId} form={form} section="embed">
      {form.data && (
        <section class="card stack" aria-labelledby="submission-url-title">
          <h2 id="submission-url-title">Submission URL</h2>
          <p>
            Browsers post to this address from the site's own pages (other origins are refused). The snippets
            below use it; after changing the fields, copy them again.
          </p>
          <Secret label="Public submission URL" value={form.data.submission_url} />
        </section>
      )}
      <Alert error={snippets.error} />
      {snippets.data &&
        KINDS.map(([kind, label, hint], i) => (
          <section
            key={kind}
            class="card stack snippet"
            aria-labelledby={`snippet-${kind}-title`}
            data-kind={kind}
          >
            <h2 id={`snippet-${kind}-title`}>{label}</h2>
            <p class="hint">{hint}</p>
            <Secret label={`${label} snippet`} value={snippets.data![i]!} />
          </section>
        ))}
    </FormFrame>
  );
}
