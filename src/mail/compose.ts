// The notification mail of a form submission: every field, as plain text and as HTML (escaped).

export interface SubmissionMailInput {
  formName: string;
  fields: Array<{ label: string; name: string; value: string }>;
  submittedAt: Date;
  /** The site the form belongs to, shown in the mail when known. */
  siteUrl?: string | undefined;
  /** The submitter's address (the form's email field), for Reply-To. */
  replyTo?: string | undefined;
  to: string;
  /** Message-ID without angle brackets (see messageIdFor). */
  messageId: string;
}

export interface ComposedMail {
  kind: string;
  messageId: string;
  to: string;
  replyTo: string | undefined;
  subject: string;
  text: string;
  html: string;
}

const escapeHtml = (value: string): string =>
  value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

/** Header values are single lines: line breaks and other control characters become spaces. */
const oneLine = (value: string, max: number): string => {
  // eslint-disable-next-line no-control-regex
  const flat = value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** A stable Message-ID (no angle brackets) for `key`, e.g. `submission-<uuid>@hostplane.example`. */
export function messageIdFor(kind: string, key: string, domain: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '-');
  return `${safe(kind)}-${safe(key)}@${safe(domain) || 'localhost'}`;
}

/** Subject, plain-text and HTML parts of the mail telling a form's owner about a submission. */
export function composeSubmissionMail(input: SubmissionMailInput): ComposedMail {
  const when = input.submittedAt.toISOString();
  const subject = `New submission: ${oneLine(input.formName, 150)}`;
  const label = (f: { label: string; name: string }) => f.label || f.name;
  const text = [
    `A new submission to the form "${input.formName}" arrived on ${when}.`,
    ...(input.siteUrl ? [`Site: ${input.siteUrl}`] : []),
    '',
    ...input.fields.flatMap((f) => {
      const value = f.value === '' ? '(empty)' : f.value;
      // Multi-line answers are indented under their label, so the layout stays readable.
      return value.includes('\n')
        ? [`${label(f)}:`, ...value.split(/\r?\n/).map((line) => `  ${line}`)]
        : [`${label(f)}: ${value}`];
    }),
    '',
    input.replyTo ? 'Reply to this mail to answer the submitter.' : '',
  ]
    .join('\n')
    .trimEnd()
    .concat('\n');
  const rows = input.fields
    .map(
      (f) =>
        `<tr><th style="text-align:left;vertical-align:top;padding:4px 12px 4px 0">${escapeHtml(label(f))}</th>` +
        `<td style="padding:4px 0;white-space:pre-wrap">${f.value === '' ? '<em>(empty)</em>' : escapeHtml(f.value)}</td></tr>`,
    )
    .join('\n');
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:sans-serif">
<p>A new submission to the form <strong>${escapeHtml(input.formName)}</strong> arrived on ${escapeHtml(when)}.</p>
${input.siteUrl ? `<p>Site: ${escapeHtml(input.siteUrl)}</p>\n` : ''}<table>
${rows}
</table>
${input.replyTo ? '<p>Reply to this mail to answer the submitter.</p>\n' : ''}</body></html>
`;
  return {
    kind: 'form_submission',
    messageId: input.messageId,
    to: input.to,
    replyTo: input.replyTo,
    subject,
    text,
    html,
  };
}
