#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, siteUrl, type Config } from '../config/config.js';
import { createLogger } from '../observability/logger.js';
import { startTracing } from '../observability/otel.js';
import { Platform, PlatformError } from '../platform/platform.js';
import { clusterSiteHook, startController, startServer } from '../server.js';
import { DataDirLockedError, openStore } from '../store/db.js';
import { adminCommands, callAdminSocket, createSiteInput, sessionInput } from './admin-socket.js';
import path from 'node:path';

const usage = `Usage:
  hostplane serve [--role all|api|edge|controller]
  hostplane migrate
  hostplane admin create-site --slug SLUG --email EMAIL [--plan free|standard|premium|business|enterprise] [--name NAME] [--json]
  hostplane admin session --email EMAIL [--json]

Configuration comes from the environment; see the README.`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    console.log(usage);
    return command ? 0 : 2;
  }
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config, rest);
    case 'migrate':
      return migrate(config);
    case 'admin':
      return admin(config, rest);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

async function serve(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { role: { type: 'string', default: 'all' } }, strict: true });
  const role = values.role;
  if (role !== 'all' && role !== 'api' && role !== 'edge' && role !== 'controller') {
    throw new UsageError(`unknown role "${role}"`);
  }
  const stopTracing = startTracing(role);
  const logger = createLogger(config.logLevel);
  let server: { close(): Promise<void> };
  if (role === 'controller') {
    server = await startController(config, { logger });
  } else {
    server = await startServer(config, { role, logger });
    logger.info(`API on ${config.baseUrl}, sites on ${siteUrl(config, '<slug>')}`);
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  await stopTracing?.();
  return 0;
}

async function migrate(config: Config): Promise<number> {
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pglite'),
  });
  await store.close();
  console.log(`migrations applied (${store.kind})`);
  return 0;
}

async function admin(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      slug: { type: 'string' },
      email: { type: 'string' },
      plan: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  let command: 'create-site' | 'session';
  let input: unknown;
  if (sub === 'create-site') {
    command = sub;
    const parsed = createSiteInput.safeParse({
      email: values.email,
      slug: values.slug,
      plan: values.plan,
      name: values.name,
    });
    if (!parsed.success)
      throw new UsageError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
    input = parsed.data;
  } else if (sub === 'session') {
    command = sub;
    const parsed = sessionInput.safeParse({ email: values.email });
    if (!parsed.success)
      throw new UsageError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
    input = parsed.data;
  } else {
    throw new UsageError(`unknown admin command "${sub ?? ''}"`);
  }

  // A running server owns the database (PGlite allows one process): ask it over the admin socket.
  const result = await callServerOrRunLocally(config, command, input);
  if (result.status !== 200) {
    const message = String(result.body.message ?? 'failed');
    if (values.json) console.log(JSON.stringify(result.body));
    else console.error(`hostplane admin ${command}: ${message}`);
    return 1;
  }
  if (values.json) {
    console.log(JSON.stringify(result.body));
  } else {
    for (const [key, value] of Object.entries(result.body)) console.log(`${key}: ${String(value)}`);
  }
  return 0;
}

async function callServerOrRunLocally(config: Config, command: 'create-site' | 'session', input: unknown) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const viaServer = await callAdminSocket(config.dataDir, command, input);
    if (viaServer) return viaServer;
    try {
      return await runLocally(config, command, input);
    } catch (err) {
      // A server is starting on this data dir: its admin socket appears once it is ready.
      if (!(err instanceof DataDirLockedError) || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function runLocally(config: Config, command: 'create-site' | 'session', input: unknown) {
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pglite'),
  });
  try {
    const commands = adminCommands(
      new Platform(store.db),
      (slug) => siteUrl(config, slug),
      // stderr: stdout carries the command's (JSON) output.
      clusterSiteHook(config, createLogger(config.logLevel, process.stderr)),
    );
    const body =
      command === 'create-site'
        ? await commands.createSite(input as Parameters<typeof commands.createSite>[0])
        : await commands.session(input as Parameters<typeof commands.session>[0]);
    return { status: 200, body };
  } catch (err) {
    if (err instanceof PlatformError) return { status: 409, body: { error: err.code, message: err.message } };
    throw err;
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      err instanceof ConfigError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      console.error(`hostplane: ${(err as Error).message}\n\n${usage}`);
      process.exit(2);
    }
    createLogger('error').error({ err }, 'hostplane failed');
    process.exit(1);
  },
);
