import { inject } from 'vitest';
import type { ConsoleRig } from './console.js';
import { eventually } from './eventually.js';
import { listMessages, readMessage } from './mailpit.js';

/**
 * The console link of a mail to `to` with `subject`, read from Mailpit: the newest, once at least
 * `count` such mails arrived (a resend retires the earlier links).
 */
export async function mailedLink(rig: ConsoleRig, to: string, subject: string, count = 1): Promise<string> {
  const mailpit = inject('mailpit');
  const summary = await eventually(
    `mail "${subject}" to ${to}`,
    async () => {
      const found = (await listMessages(mailpit, to)).filter((m) => m.Subject === subject);
      return found.length >= count ? found[0] : undefined;
    },
    30_000,
  );
  const message = await readMessage(mailpit, summary.ID);
  const escaped = rig.origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const link = message.Text.match(new RegExp(`${escaped}/console/[\\w-]+#token=[\\w-]+`))?.[0];
  if (!link) throw new Error(`no console link in: ${message.Text}`);
  return link;
}
