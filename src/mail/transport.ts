import nodemailer from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';

/** One message as handed to SMTP. */
export interface OutgoingMail {
  from: string;
  to: string;
  replyTo: string | undefined;
  subject: string;
  text: string;
  html: string | undefined;
  /** Without angle brackets. */
  messageId: string;
}

export interface MailTransport {
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

/**
 * SMTP through nodemailer, to `smtp://user:pass@host:port` or `smtps://…`. One pooled connection,
 * reused from mail to mail (a new connection per mail halves the rate) and reopened after errors.
 */
export function smtpTransport(smtpUrl: string): MailTransport {
  const transporter = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: 1,
    maxMessages: 100,
    // A hung server must not hold a claimed mail past its lease (see outbox.ts).
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  } satisfies SMTPPool.Options);
  return {
    async send(mail) {
      await transporter.sendMail({
        from: mail.from,
        to: mail.to,
        ...(mail.replyTo ? { replyTo: mail.replyTo } : {}),
        subject: mail.subject,
        text: mail.text,
        ...(mail.html ? { html: mail.html } : {}),
        messageId: `<${mail.messageId}>`,
        headers: { 'Auto-Submitted': 'auto-generated' },
      });
    },
    close() {
      transporter.close();
    },
  };
}
