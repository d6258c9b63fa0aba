import { createRequire } from 'node:module';
import { isatty } from 'node:tty';
import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { chooseLogFormat, type LogFormatSetting } from '../config/index.js';

// Secrets travel in these headers and fields; pino replaces them before a line is written.
export const redactPaths = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-sqlite-token"]',
  'req.headers["x-sqlite-user-token"]',
  'req.headers["x-admin-secret"]',
  'req.headers.cookie',
  'apiKey',
  'token',
  'password',
  '*.apiKey',
  '*.token',
  '*.password',
];

/**
 * A pino logger at `level`, writing to `destination` (default: standard output). In `json` the
 * lines are pino's JSON; in `pretty` pino-pretty's readable lines; `auto` (HOSTPLANE_LOG_FORMAT's
 * default) is pretty when the destination is a terminal. Redaction happens in pino, before either.
 */
export function createLogger(
  level: string,
  destination?: NodeJS.WritableStream,
  format: LogFormatSetting = 'json',
): Logger {
  const options = {
    level,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'hostplane' },
  };
  const tty = destination ? (destination as { isTTY?: boolean }).isTTY === true : isatty(1);
  if (chooseLogFormat(format, tty) === 'pretty') return pino(options, prettyDestination(destination, tty));
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}

/**
 * Each JSON line prettified in this process as it is written (synchronously: a line logged just
 * before an exit is not lost): a short local time, the level word, the message, then the fields;
 * colours on a terminal. pino-pretty is loaded only here, so a JSON process never loads it.
 */
function prettyDestination(destination: NodeJS.WritableStream | undefined, colorize: boolean) {
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  const pretty = prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
  });
  const out = destination ?? pino.destination({ dest: 1, sync: true });
  return { write: (line: string) => void out.write(pretty(line)) };
}

export type { Logger };
