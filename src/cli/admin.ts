import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { z } from 'zod';
import type { Config } from '../config/index.js';
import { isAppError, type ErrorBody } from '../errors/index.js';
import {
  createSiteInput,
  drainShardInput,
  inviteInput,
  runAdminLocally,
  sessionInput,
  type AdminCommand,
} from '../server/index.js';
import { callAdminSocket } from './admin-client.js';
import { CommandFailed, usageError } from './errors.js';

export type { AdminCommand };

type Parsed =
  | { command: 'create-site'; input: z.infer<typeof createSiteInput>; json: boolean }
  | {
      command: 'session';
      input: z.infer<typeof sessionInput>;
      json: boolean;
    }
  | { command: 'drain-shard'; input: z.infer<typeof drainShardInput>; json: boolean }
  | { command: 'invite'; input: z.infer<typeof inviteInput>; json: boolean };

/** Parses `admin <command> …`; a bad flag or value is a USAGE error (exit 2). */
export function parseAdminArgs(command: AdminCommand, args: string[]): Parsed {
  const usageName = `admin ${command}`;
  const str = { type: 'string' } as const;
  const options: NonNullable<ParseArgsConfig['options']> =
    command === 'create-site'
      ? { slug: str, email: str, plan: str, name: str, json: { type: 'boolean' } }
      : command === 'session'
        ? { email: str, json: { type: 'boolean' } }
        : command === 'invite'
          ? { email: str, plan: str, json: { type: 'boolean' } }
          : { shard: str, to: str, json: { type: 'boolean' } };
  let parsedValues: Record<string, unknown>;
  try {
    parsedValues = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw usageError((err as Error).message, usageName);
  }
  const values = parsedValues as Partial<
    Record<'slug' | 'email' | 'plan' | 'name' | 'shard' | 'to', string>
  > & {
    json?: boolean;
  };
  const json = values.json === true;
  const flagIssues = (issues: z.ZodError['issues']) =>
    usageError(
      issues
        .map((i) => {
          const flag = i.path.join('.');
          // zod's wording for a missing value ("expected string, received undefined") is for programmers.
          return values[flag as keyof typeof values] === undefined
            ? `--${flag} is required`
            : `--${flag}: ${i.message}`;
        })
        .join('; '),
      usageName,
    );
  if (command === 'create-site') {
    const parsed = createSiteInput.safeParse({
      email: values.email,
      slug: values.slug,
      plan: values.plan,
      name: values.name,
    });
    if (!parsed.success) throw flagIssues(parsed.error.issues);
    return { command, input: parsed.data, json };
  }
  if (command === 'invite') {
    const parsed = inviteInput.safeParse({ email: values.email, plan: values.plan });
    if (!parsed.success) throw flagIssues(parsed.error.issues);
    return { command, input: parsed.data, json };
  }
  if (command === 'drain-shard') {
    const parsed = drainShardInput.safeParse({ shard: values.shard, to: values.to });
    if (!parsed.success) throw flagIssues(parsed.error.issues);
    return { command, input: parsed.data, json };
  }
  const parsed = sessionInput.safeParse({ email: values.email });
  if (!parsed.success) throw flagIssues(parsed.error.issues);
  return { command, input: parsed.data, json };
}

/** Runs an admin command and prints its result; failures are thrown (main.ts prints them). */
export async function runAdmin(config: Config, parsed: Parsed): Promise<number> {
  const result = await callServerOrRunLocally(config, parsed);
  if (parsed.json) {
    console.log(JSON.stringify(result));
  } else {
    for (const [key, value] of Object.entries(result)) {
      console.log(`${key}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
    }
  }
  return 0;
}

async function callServerOrRunLocally(config: Config, parsed: Parsed): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    // A running server owns the database (PGlite allows one process): ask it over the admin socket.
    const viaServer = await callAdminSocket(config.dataDir, parsed.command, parsed.input);
    if (viaServer) {
      if (viaServer.status !== 200) throw new CommandFailed(viaServer.status, viaServer.body as ErrorBody);
      return viaServer.body;
    }
    try {
      return await runAdminLocally(config, parsed.command, parsed.input);
    } catch (err) {
      // A server is starting on this data dir: its admin socket appears once it is ready.
      if (!isAppError(err, 'DATA_DIR_LOCKED') || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
