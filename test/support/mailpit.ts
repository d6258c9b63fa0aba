import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureOutput, freePort, terminate, waitUntilReady } from './procs.js';

/** How to reach a Mailpit (what tests get through `inject('mailpit')`). */
export interface MailpitEnv {
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  smtpUrl: string;
  /** `http://127.0.0.1:<port>`, its HTTP API. */
  apiUrl: string;
}

export interface MailpitServer extends MailpitEnv {
  /** Stops the server (the SMTP port then refuses connections); what it received is kept. */
  stop(): Promise<void>;
  /** Starts it again on the same ports with the same messages. */
  start(): Promise<void>;
  /** Stops it for good and deletes its folder. */
  close(): Promise<void>;
}

/** Built by test/tools/build.sh. */
export const MAILPIT_BIN = fileURLToPath(new URL('../../.cache/tools/mailpit', import.meta.url));

export interface MailAddress {
  Name: string;
  Address: string;
}

/** A message as listed by `GET /api/v1/messages`. */
export interface MailSummary {
  ID: string;
  MessageID: string;
  From: MailAddress;
  To: MailAddress[];
  ReplyTo: MailAddress[];
  Subject: string;
  Created: string;
}

/** A message as read by `GET /api/v1/message/{ID}`. */
export interface MailMessage extends MailSummary {
  Text: string;
  HTML: string;
}

async function isUp(apiUrl: string): Promise<boolean> {
  const res = await fetch(`${apiUrl}/livez`, { signal: AbortSignal.timeout(2_000) });
  await res.body?.cancel();
  return res.status === 200;
}

/**
 * Starts Mailpit on 127.0.0.1 or `host` (SMTP and HTTP API on free ports, its database in a fresh temp
 * folder). Fails when the binary is missing, as every real part of the tests does. `args` adds
 * Mailpit flags (e.g. `--smtp-allowed-recipients <regexp>`, to have others refused with a 550).
 */
export async function startMailpit(options: { args?: string[]; host?: string } = {}): Promise<MailpitServer> {
  const host = options.host ?? '127.0.0.1';
  try {
    accessSync(MAILPIT_BIN, constants.X_OK);
  } catch {
    throw new Error(`Mailpit binary not found at ${MAILPIT_BIN}: run \`bash test/tools/build.sh\``);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'hostplane-mailpit-'));
  const smtpPort = await freePort();
  let httpPort = await freePort();
  while (httpPort === smtpPort) httpPort = await freePort();
  const smtpUrl = `smtp://${host}:${smtpPort}`;
  const apiUrl = `http://${host}:${httpPort}`;
  let child: ChildProcess | undefined;

  // Should the test run die without close(), do not leave a server behind.
  const onExit = (): void => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  const start = async (): Promise<void> => {
    if (child) return;
    const proc = spawn(
      MAILPIT_BIN,
      [
        '--smtp',
        `${host}:${smtpPort}`,
        '--listen',
        `${host}:${httpPort}`,
        '--database',
        path.join(dir, 'mailpit.db'),
        '--smtp-disable-rdns',
        '--disable-version-check',
        '--max',
        '0',
        '--quiet',
        ...(options.args ?? []),
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    const output = captureOutput(proc);
    try {
      await waitUntilReady('mailpit', proc, output, () => isUp(apiUrl));
    } catch (err) {
      await terminate(proc, 'SIGKILL');
      child = undefined;
      throw err;
    }
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc) await terminate(proc, 'SIGTERM');
  };

  try {
    await start();
  } catch (err) {
    process.removeListener('exit', onExit);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let closed: Promise<void> | undefined;
  return {
    smtpUrl,
    apiUrl,
    start,
    stop,
    close: () =>
      (closed ??= stop().then(() => {
        process.removeListener('exit', onExit);
        rmSync(dir, { recursive: true, force: true });
      })),
  };
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Every message Mailpit holds (newest first), optionally only those sent to `to`. */
export async function listMessages(env: MailpitEnv, to?: string): Promise<MailSummary[]> {
  const body = await getJson<{ messages: MailSummary[] }>(`${env.apiUrl}/api/v1/messages?limit=1000`);
  return to === undefined
    ? body.messages
    : body.messages.filter((m) => m.To.some((a) => a.Address.toLowerCase() === to.toLowerCase()));
}

/** One message with its text and HTML parts. */
export function readMessage(env: MailpitEnv, id: string): Promise<MailMessage> {
  return getJson<MailMessage>(`${env.apiUrl}/api/v1/message/${encodeURIComponent(id)}`);
}

/** The message's headers, each a list of values. */
export function readHeaders(env: MailpitEnv, id: string): Promise<Record<string, string[]>> {
  return getJson<Record<string, string[]>>(`${env.apiUrl}/api/v1/message/${encodeURIComponent(id)}/headers`);
}

/** Deletes every message. */
export async function deleteAllMessages(env: MailpitEnv): Promise<void> {
  const res = await fetch(`${env.apiUrl}/api/v1/messages`, { method: 'DELETE' });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`DELETE messages: ${res.status}`);
}
