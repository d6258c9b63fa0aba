import { pino, type Logger } from 'pino';

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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'hostplane' },
  };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}

export type { Logger };
