import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { z } from 'zod';
import { AppError, isAppError, type ErrorBody } from '../errors/index.js';
import type { Logger } from '../observability/index.js';
import { planTypes, type Platform } from '../platform/index.js';
import { drainShard } from '../sqlite/index.js';
import type { Db } from '../store/index.js';

/**
 * The operator's channel to a running server: an HTTP server on a unix socket in the data dir,
 * guarded by a secret file there (owner-only). It lets `hostplane admin …` act while the server
 * holds PGlite, which only one process may open. The client is the CLI's (cli/admin-client.ts).
 */
export const adminSocketPath = (dataDir: string) => path.join(dataDir, 'admin.sock');
export const adminSecretPath = (dataDir: string) => path.join(dataDir, 'admin.secret');

export const createSiteInput = z.object({
  email: z.email().max(254),
  slug: z.string().min(1).max(63),
  plan: z.enum(planTypes).default('free'),
  name: z.string().min(1).max(200).optional(),
});
export const sessionInput = z.object({ email: z.email().max(254) });
export const inviteInput = z.object({ email: z.email().max(254), plan: z.enum(planTypes).optional() });
const shardName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/, 'must be a shard name');
export const drainShardInput = z.object({ shard: shardName, to: shardName.optional() });

export type AdminCommand = 'create-site' | 'invite' | 'session' | 'drain-shard';
/** The input of each admin command, as the CLI parses it and the socket receives it. */
export type AdminInput<C extends AdminCommand> = z.infer<
  C extends 'create-site'
    ? typeof createSiteInput
    : C extends 'invite'
      ? typeof inviteInput
      : C extends 'session'
        ? typeof sessionInput
        : typeof drainShardInput
>;

export interface AdminCommands {
  createSite(input: z.infer<typeof createSiteInput>): Promise<Record<string, unknown>>;
  invite(input: z.infer<typeof inviteInput>): Promise<Record<string, unknown>>;
  session(input: z.infer<typeof sessionInput>): Promise<Record<string, unknown>>;
  drainShard(input: z.infer<typeof drainShardInput>): Promise<Record<string, unknown>>;
}

/** Runs `command` with `input` (already parsed) on `commands`: the socket's and the local run's dispatch. */
export function runAdminCommand<C extends AdminCommand>(
  commands: AdminCommands,
  command: C,
  input: AdminInput<C>,
): Promise<Record<string, unknown>> {
  switch (command) {
    case 'create-site':
      return commands.createSite(input as AdminInput<'create-site'>);
    case 'invite':
      return commands.invite(input as AdminInput<'invite'>);
    case 'session':
      return commands.session(input as AdminInput<'session'>);
    default:
      return commands.drainShard(input as AdminInput<'drain-shard'>);
  }
}

/** Runs after a site is committed; what it returns is added to the command's output. */
export type SiteCreatedHook = (site: { siteId: number; slug: string }) => Promise<Record<string, unknown>>;

export function adminCommands(
  platform: Platform,
  siteUrlOf: (slug: string) => string,
  onSiteCreated: SiteCreatedHook | undefined,
  db: Db,
): AdminCommands {
  return {
    async drainShard(input) {
      return { ...(await drainShard(db, input.shard, input.to)) };
    },
    async createSite(input) {
      const created = await platform.createSite(input);
      const extra = onSiteCreated ? await onSiteCreated(created) : {};
      return { ...created, siteUrl: siteUrlOf(created.slug), ...extra };
    },
    async invite(input) {
      const invited = await platform.accounts.invite(input);
      return {
        accountId: invited.accountId,
        email: input.email.trim().toLowerCase(),
        link: invited.link,
        expiresAt: invited.expiresAt.toISOString(),
        mailed: invited.mailed,
      };
    },
    async session(input) {
      const { token, expiresAt } = await platform.createSession(input.email);
      return { token, expiresAt: expiresAt.toISOString() };
    },
  };
}

async function ensureSecret(dataDir: string): Promise<string> {
  const file = adminSecretPath(dataDir);
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing && existing.trim().length >= 32) {
    await chmod(file, 0o600);
    return existing.trim();
  }
  const secret = randomBytes(32).toString('hex');
  await writeFile(file, secret, { mode: 0o600 });
  return secret;
}

export async function startAdminSocket(
  dataDir: string,
  commands: AdminCommands,
  logger: Logger,
): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true });
  const secret = Buffer.from(await ensureSecret(dataDir));
  const socketPath = adminSocketPath(dataDir);
  await rm(socketPath, { force: true });

  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const fail = (err: unknown) => {
      const { status, body } = socketError(err, logger);
      send(status, body);
    };
    const presented = Buffer.from(String(req.headers['x-admin-secret'] ?? ''));
    if (presented.length !== secret.length || !timingSafeEqual(presented, secret)) {
      return fail(
        new AppError('UNAUTHORIZED', {
          message: 'bad admin secret',
          hint: `the secret is in ${adminSecretPath(dataDir)}, readable by the server's user only`,
        }),
      );
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        try {
          const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
          if (req.method === 'POST' && req.url === '/create-site') {
            return send(200, await commands.createSite(createSiteInput.parse(body)));
          }
          if (req.method === 'POST' && req.url === '/invite') {
            return send(200, await commands.invite(inviteInput.parse(body)));
          }
          if (req.method === 'POST' && req.url === '/session') {
            return send(200, await commands.session(sessionInput.parse(body)));
          }
          if (req.method === 'POST' && req.url === '/drain-shard') {
            return send(200, await commands.drainShard(drainShardInput.parse(body)));
          }
          fail(new AppError('NOT_FOUND', { message: `unknown admin command ${req.url}` }));
        } catch (err) {
          fail(err);
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });
  await chmod(socketPath, 0o600);
  return async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(socketPath, { force: true });
  };
}

/** The admin socket's one error mapping: registry codes as the HTTP API answers them. */
function socketError(err: unknown, logger: Logger): { status: number; body: ErrorBody } {
  if (isAppError(err)) return { status: err.status, body: err.body };
  if (err instanceof z.ZodError || err instanceof SyntaxError) {
    const invalid = new AppError('INVALID_REQUEST', { message: err.message });
    return { status: invalid.status, body: invalid.body };
  }
  logger.error({ err }, 'admin command failed');
  const internal = new AppError('INTERNAL');
  return { status: internal.status, body: internal.body };
}
