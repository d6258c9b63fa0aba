import { stat } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { MAX_DEPLOY_MESSAGE } from '../../files/client.js';
import { usageError } from '../errors.js';
import { DeployApi } from './api.js';
import { deployCommand } from './deploy.js';
import { deploysCommand, publishCommand, rollbackCommand } from './history.js';
import { retryNote, type Io } from './types.js';

export type ApiCommand = 'deploy' | 'deploys' | 'rollback' | 'publish';

export const DEFAULT_API_URL = 'http://localhost:8080';
export const DEFAULT_CONCURRENCY = 8;
const MAX_CONCURRENCY = 32;

const bool = { type: 'boolean' } as const;
const str = { type: 'string' } as const;
const OPTIONS: Record<ApiCommand, NonNullable<ParseArgsConfig['options']>> = {
  deploy: { api: str, draft: bool, 'dry-run': bool, concurrency: str, json: bool, message: str },
  deploys: { api: str, limit: str, json: bool },
  rollback: { api: str, json: bool },
  publish: { api: str, json: bool },
};
const POSITIONALS: Record<ApiCommand, { min: number; max: number; name: string }> = {
  deploy: { min: 1, max: 1, name: 'DIR' },
  deploys: { min: 0, max: 0, name: '' },
  rollback: { min: 0, max: 1, name: 'ID' },
  publish: { min: 1, max: 1, name: 'ID' },
};

/** `hostplane deploy|deploys|rollback|publish …`: parses the line, then runs the command. */
export async function runApiCommand(command: ApiCommand, args: string[]): Promise<number> {
  if (args.some((a) => /^--(api-?key|key|token)(=|$)/.test(a)))
    throw usageError(
      'the API key is read from HOSTPLANE_API_KEY only (a flag would leave it in shell history and process lists)',
      command,
    );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: OPTIONS[command], strict: true, allowPositionals: true });
  } catch (err) {
    throw usageError((err as Error).message, command);
  }
  // No option is `multiple`: every value is a string or a boolean.
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const { positionals } = parsed;
  const expected = POSITIONALS[command];
  if (positionals.length < expected.min) throw usageError(`missing ${expected.name}`, command);
  if (positionals.length > expected.max)
    throw usageError(`unexpected argument "${positionals[expected.max]}"`, command);

  const json = values.json === true;
  const io: Io = {
    json,
    say: (line) => (json ? console.error(line) : console.log(line)),
    progressOut: json ? process.stderr : process.stdout,
  };
  const api = new DeployApi({
    baseUrl: apiUrl(values.api as string | undefined, command),
    apiKey: apiKey(command),
  });
  api.onRetry = (what, attempt, waitMs, reason) => io.say(retryNote(what, attempt, waitMs, reason));

  switch (command) {
    case 'deploy': {
      const dir = positionals[0]!;
      const info = await stat(dir).catch(() => undefined);
      if (!info?.isDirectory()) throw usageError(`${dir} is not a folder`, command);
      const message = values.message as string | undefined;
      if (message !== undefined && message.length > MAX_DEPLOY_MESSAGE)
        throw usageError(`--message is at most ${MAX_DEPLOY_MESSAGE} characters`, command);
      return deployCommand(api, io, {
        dir,
        message: message === undefined || message.trim() === '' ? undefined : message,
        draft: values.draft === true,
        dryRun: values['dry-run'] === true,
        concurrency: intFlag(
          values.concurrency,
          'concurrency',
          1,
          MAX_CONCURRENCY,
          DEFAULT_CONCURRENCY,
          command,
        ),
      });
    }
    case 'deploys':
      return deploysCommand(api, io, intFlag(values.limit, 'limit', 1, 100, 20, command));
    case 'rollback':
      return rollbackCommand(api, io, positionals[0]);
    case 'publish':
      return publishCommand(api, io, positionals[0]!);
  }
}

function apiUrl(flag: string | undefined, command: ApiCommand): string {
  const raw = flag ?? (process.env.HOSTPLANE_API_URL || DEFAULT_API_URL);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`${flag === undefined ? 'HOSTPLANE_API_URL' : '--api'}: "${raw}" is not a URL`, command);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(
      `${flag === undefined ? 'HOSTPLANE_API_URL' : '--api'} must be an http or https URL`,
      command,
    );
  // A path prefix (an API behind a reverse proxy's sub-path) is kept.
  return url.href.replace(/\/+$/, '');
}

function apiKey(command: ApiCommand): string {
  const key = process.env.HOSTPLANE_API_KEY?.trim();
  if (!key)
    throw usageError(
      "HOSTPLANE_API_KEY is not set: export the site's API key (in CI, from a secret) before running this command",
      command,
    );
  return key;
}

function intFlag(
  raw: string | boolean | undefined,
  name: string,
  min: number,
  max: number,
  fallback: number,
  command: ApiCommand,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw usageError(`--${name} must be a whole number from ${min} to ${max}`, command);
  return n;
}
