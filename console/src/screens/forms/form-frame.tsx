import type { ComponentChildren } from 'preact';
import { to } from '../../links.js';
import { Link, usePath } from '../../router.js';
import { Alert, useLoad, type Loaded } from '../../ui/kit.js';
import { SiteFrame } from '../site-nav.js';
import { loadForm, type Form } from './api.js';
import './forms.css';

/** Loads one form for a screen. */
export const useForm = (siteId: string, formId: string): Loaded<Form> =>
  useLoad(() => loadForm(siteId, formId), [siteId, formId]);

/** A form's screens: the site's frame, a way back to the list, and the form's own sections. */
export function FormFrame({
  siteId,
  form,
  section,
  children,
  actions,
}: {
  siteId: string;
  form: Loaded<Form>;
  section: string;
  children?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  const path = usePath();
  const formId = form.data?.id ?? '';
  const sections = [
    [to.form(siteId, formId), 'Fields and settings'],
    [to.formEmbed(siteId, formId), 'Embed'],
    [to.formSubmissions(siteId, formId), 'Submissions'],
  ] as const;
  const name = form.data?.name ?? '…';
  return (
    <SiteFrame siteId={siteId} title={`${name} (${section})`} actions={actions}>
      <p class="back">
        <Link href={to.forms(siteId)}>All forms of the site</Link>
      </p>
      <Alert error={form.error} />
      {form.data && (
        <nav class="subtabs" aria-label="Form sections">
          {sections.map(([href, label]) => (
            <Link key={href} href={href} aria-current={path === href ? 'page' : undefined}>
              {label}
            </Link>
          ))}
        </nav>
      )}
      {form.data && children}
    </SiteFrame>
  );
}
