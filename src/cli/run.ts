import { ConfigError, loadConfig } from '../config/index.js';
import { CommandFailed, hintOf, registryError, UsageError } from './errors.js';
import { usages, version, type CommandName } from './usage.js';

// Exit codes: 0 done, 1 the command failed (one line and a hint on stderr), 2 the command line
// (or the environment's configuration) is wrong. Heavy modules (the server, the database) load
// only in the command that needs them, so --help and --version answer at once.

/** What the failure report needs to know about the command being run. */
interface Context {
  command: CommandName;
  json: boolean;
}

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h';
const wantsHelp = (args: string[]) => args.some(isHelp);

function help(command: CommandName): number {
  console.log(usages[command]);
  return 0;
}

async function main(argv: string[], ctx: Context): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('no command given');
  if (isHelp(command)) return help('');
  if (command === 'help') return help(helpTopic(rest));
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(version());
    return 0;
  }
  switch (command) {
    case 'serve': {
      ctx.command = 'serve';
      if (wantsHelp(rest)) return help('serve');
      const { parseServeArgs, serve } = await import('./serve.js');
      const role = parseServeArgs(rest);
      return serve(loadConfig(), role);
    }
    case 'migrate': {
      ctx.command = 'migrate';
      if (wantsHelp(rest)) return help('migrate');
      if (rest.length)
        throw new UsageError(`migrate takes no arguments (got "${rest.join(' ')}")`, 'migrate');
      const { migrateCommand } = await import('./migrate.js');
      return migrateCommand(loadConfig());
    }
    case 'admin': {
      ctx.command = 'admin';
      const [sub, ...args] = rest;
      if (sub === undefined)
        throw new UsageError('missing the admin command (create-site or session)', 'admin');
      if (isHelp(sub)) return help('admin');
      if (sub !== 'create-site' && sub !== 'session') {
        throw new UsageError(`unknown admin command "${sub}"`, 'admin');
      }
      ctx.command = `admin ${sub}`;
      ctx.json = args.includes('--json');
      if (wantsHelp(args)) return help(ctx.command);
      const { parseAdminArgs, runAdmin } = await import('./admin.js');
      return runAdmin(loadConfig(), parseAdminArgs(sub, args));
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function helpTopic(args: string[]): CommandName {
  const topic = args.join(' ');
  if (topic in usages) return topic as CommandName;
  throw new UsageError(`no help on "${topic}"`);
}

/**
 * The CLI's one error mapping. Usage and configuration errors: exit 2. Registry errors (a taken
 * slug, an unknown account): exit 1 with the code's message, and its JSON body on stdout under
 * --json. Anything else: exit 1 with one line and what to do about it; the stack only with
 * LOG_LEVEL=debug, never a JSON log line.
 */
function report(err: unknown, ctx: Context): number {
  const prefix = `hostplane${ctx.command ? ` ${ctx.command}` : ''}`;
  if (err instanceof UsageError) {
    const topic = err.command ?? ctx.command;
    if (!topic) console.error(`hostplane: ${err.message}\n\n${usages['']}`);
    else console.error(`${prefix}: ${err.message}\nRun \`hostplane ${topic} --help\` for usage.`);
    return 2;
  }
  if (err instanceof ConfigError) {
    console.error(`${prefix}: ${err.message}\nThe settings are listed in the README (Configuration).`);
    return 2;
  }
  const known = err instanceof CommandFailed ? { body: err.body } : registryError(err);
  if (known) {
    if (ctx.json) console.log(JSON.stringify(known.body));
    console.error(`${prefix}: ${known.body.message}`);
    return 1;
  }
  const { message, hint } = describe(err);
  if (ctx.json) console.log(JSON.stringify({ error: 'Failed', message }));
  console.error(`${prefix}: ${message}`);
  const debug = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  if (debug && err instanceof Error && err.stack) console.error(err.stack);
  console.error(hint ?? (debug ? '' : 'Set LOG_LEVEL=debug to see the stack trace.'));
  return 1;
}

/** A sentence for the failures a user can fix: ports, the database, the data dir. */
function describe(err: unknown): { message: string; hint?: string } {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number; errors?: Error[] };
  // Node reports a refused connection to a name with two addresses as an AggregateError, no message.
  const message = e?.message || e?.errors?.[0]?.message || String(err);
  if (e?.syscall === 'listen' && e.code === 'EADDRINUSE') {
    // Two ports are opened: the public one (PORT) and the metrics one (HOSTPLANE_METRICS_PORT).
    const metricsPort = process.env.HOSTPLANE_METRICS_PORT || '9090';
    const variable = String(e.port) === metricsPort ? 'HOSTPLANE_METRICS_PORT' : 'PORT';
    return {
      message: `port ${e.port} on ${e.address} is already in use`,
      hint: `Stop the process that uses it, or set ${variable} to a free port.`,
    };
  }
  if (e?.syscall === 'listen' && e.code === 'EACCES') {
    return { message: `not allowed to listen on port ${e.port}`, hint: 'Set PORT to a port above 1023.' };
  }
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOTFOUND' || e?.code === 'ETIMEDOUT') {
    return {
      message: `cannot reach the database: ${message}`,
      hint: 'Check DATABASE_URL and that PostgreSQL is running (unset it to use the embedded database).',
    };
  }
  return { message, hint: hintOf(err) };
}

const ctx: Context = { command: '', json: false };
main(process.argv.slice(2), ctx).then(
  (code) => process.exit(code),
  (err: unknown) => process.exit(report(err, ctx)),
);
