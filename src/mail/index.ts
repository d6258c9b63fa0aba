import type { DomainModule } from '../http/index.js';
import type { MailOutbox } from './outbox.js';

// The mail domain's public face: an outbox other domains write to inside their own transactions
// (enqueue, purgeBySource), the worker that sends it through SMTP, and the submission mail.
export {
  describeError,
  enqueue,
  MailOutbox,
  purgeBySource,
  type MailMessage,
  type MailSettings,
} from './outbox.js';
export {
  composeSubmissionMail,
  messageIdFor,
  type ComposedMail,
  type SubmissionMailInput,
} from './compose.js';
export {
  composeAccountMail,
  composeAddressConfirmMail,
  type AccountMailInput,
  type AddressConfirmMailInput,
} from './account-mail.js';
export { smtpTransport, type MailTransport, type OutgoingMail } from './transport.js';

const DAY = 24 * 60 * 60 * 1000;
/** How often the worker looks for due mail. */
export const MAIL_SWEEP_MS = 2_000;
/** Sent mails (they hold what visitors wrote) are deleted after this long. */
export const SENT_MAIL_RETENTION_MS = 7 * DAY;

/**
 * The outbox as a module of the api role: two sweeps, sending due mail every two seconds and
 * deleting sent mail after a week. Several replicas run them at once; the claims keep every mail
 * to one sender.
 */
export function mailModule(deps: { outbox: MailOutbox }): DomainModule {
  return {
    name: 'mail',
    sweeps: [
      { name: 'mail_outbox', everyMs: MAIL_SWEEP_MS, run: () => deps.outbox.deliverDue() },
      {
        name: 'mail_sent',
        everyMs: 60 * 60 * 1000,
        run: () => deps.outbox.sweepSent(SENT_MAIL_RETENTION_MS),
      },
    ],
  };
}
