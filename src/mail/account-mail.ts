// The account area's mails: an invitation, an address verification, a password reset. Each holds
// one link with a one-time token; plain text and HTML.
import type { ComposedMail } from './compose.js';

export interface AccountMailInput {
  kind: 'invite' | 'verify' | 'reset' | 'taken';
  to: string;
  link: string;
  expiresAt: Date;
  messageId: string;
}

const escapeHtml = (value: string): string =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const wording = {
  invite: {
    subject: 'You are invited to Hostplane',
    intro: 'You have been invited to host your sites on Hostplane. Choose a password to start:',
    action: 'Accept the invitation',
  },
  verify: {
    subject: 'Confirm your email address',
    intro: 'Confirm this address to finish signing up to Hostplane:',
    action: 'Confirm my address',
  },
  taken: {
    subject: 'Someone tried to sign up with your address',
    intro:
      'Someone (hopefully you) tried to create a Hostplane account with this address, which already has one. Sign in as usual, or choose a new password here if you forgot it:',
    action: 'Choose a new password',
  },
  reset: {
    subject: 'Reset your Hostplane password',
    intro: 'Someone (hopefully you) asked to reset the password of this Hostplane account:',
    action: 'Choose a new password',
  },
} as const;

/**
 * Whether a mail of `kind` carries a one-time link (an account invitation, verification or
 * reset): the outbox blanks its bodies once it is sent or given up, so no token stays readable.
 */
export const holdsOneTimeLink = (kind: string): boolean =>
  kind.startsWith('account_') || kind === ADDRESS_CONFIRM_KIND;

/** The mail that asks a form's new notification address to confirm (see src/forms/addresses.ts). */
export const ADDRESS_CONFIRM_KIND = 'form_notification_confirm';

/** What is left of such a mail's bodies in the outbox. */
export const ERASED_BODY = '(erased once handled: it held a one-time link)';

export function composeAccountMail(input: AccountMailInput): ComposedMail {
  const w = wording[input.kind];
  const until = input.expiresAt.toISOString();
  const ignore =
    input.kind === 'reset' || input.kind === 'taken'
      ? 'If you did not ask for this, ignore this mail: your password stays as it is.'
      : 'If you did not expect this mail, ignore it.';
  // The note of a taken address links to the reset page: no token, nothing expires.
  const validity = input.kind === 'taken' ? '' : `The link works once, until ${until}.`;
  const text = `${w.intro}\n\n${input.link}\n\n${validity ? validity + '\n' : ''}${ignore}\n`;
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(w.subject)}</title></head>
<body style="font-family:sans-serif">
<p>${escapeHtml(w.intro)}</p>
<p><a href="${escapeHtml(input.link)}">${escapeHtml(w.action)}</a></p>
<p>${validity ? escapeHtml(validity) + '<br>' : ''}${escapeHtml(ignore)}</p>
</body></html>
`;
  return {
    kind: `account_${input.kind}`,
    messageId: input.messageId,
    to: input.to,
    replyTo: undefined,
    subject: w.subject,
    text,
    html,
  };
}

export interface AddressConfirmMailInput {
  to: string;
  /** The account that set the address. */
  accountEmail: string;
  formName: string;
  link: string;
  expiresAt: Date;
  messageId: string;
}

/**
 * Asks the owner of an address whether it should receive a form's submissions: who asked, for
 * which form, one link. Nothing else is sent to the address until it is followed.
 */
export function composeAddressConfirmMail(input: AddressConfirmMailInput): ComposedMail {
  const subject = 'Confirm this address for form submissions';
  // The form's name is the account's text: one line, clipped, quoted (and escaped in HTML).
  // eslint-disable-next-line no-control-regex
  const formName = input.formName.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').slice(0, 120);
  const intro = `The Hostplane account ${input.accountEmail} wants the submissions of its form "${formName}" mailed to this address. Nothing is sent here until you confirm:`;
  const validity = `The link works once, until ${input.expiresAt.toISOString()}.`;
  const ignore = 'If you do not want these mails, ignore this one: nothing more will be sent to you.';
  const text = `${intro}\n\n${input.link}\n\n${validity}\n${ignore}\n`;
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:sans-serif">
<p>${escapeHtml(intro)}</p>
<p><a href="${escapeHtml(input.link)}">Confirm this address</a></p>
<p>${escapeHtml(validity)}<br>${escapeHtml(ignore)}</p>
</body></html>
`;
  return {
    kind: ADDRESS_CONFIRM_KIND,
    messageId: input.messageId,
    to: input.to,
    replyTo: undefined,
    subject,
    text,
    html,
  };
}
