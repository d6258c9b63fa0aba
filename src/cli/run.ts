import { AppError, isAppError } from '../errors/index.js';
import {
  ApiUnavailable,
  asStartupError,
  CommandFailed,
  exitCodeOf,
  LocalRefusal,
  errorKind,
  messageOf,
  usageError,
} from './errors.js';
import { usages, version, type CommandName } from './usage.js';

// Exit codes (see errors.ts): 0 done, 1 the command failed (one line and a hint on stderr), 2 the
// command line (or the environment's configuration) is wrong, 3 to 5 for the API commands (key
// refused, limit, unreachable). Heavy modules (the server, the
// database, the configuration) load only in the command that needs them, so --help and --version
// answer at once and the API commands (deploy…) load the client only.

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
  if (command === undefined) throw usageError('no command given');
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
      const [{ parseServeArgs, serve }, { loadConfig }] = await Promise.all([
        import('./serve.js'),
        import('../config/index.js'),
      ]);
      const role = parseServeArgs(rest);
      return serve(loadConfig(), role);
    }
    case 'migrate': {
      ctx.command = 'migrate';
      if (wantsHelp(rest)) return help('migrate');
      if (rest.length) throw usageError(`migrate takes no arguments (got "${rest.join(' ')}")`, 'migrate');
      const [{ migrateCommand }, { loadConfig }] = await Promise.all([
        import('./migrate.js'),
        import('../config/index.js'),
      ]);
      return migrateCommand(loadConfig());
    }
    case 'admin': {
      ctx.command = 'admin';
      const [sub, ...args] = rest;
      if (sub === undefined)
        throw usageError('missing the admin command (create-site, invite, session or drain-shard)', 'admin');
      if (isHelp(sub)) return help('admin');
      if (sub !== 'create-site' && sub !== 'invite' && sub !== 'session' && sub !== 'drain-shard') {
        throw usageError(`unknown admin command "${sub}"`, 'admin');
      }
      ctx.command = `admin ${sub}`;
      ctx.json = args.includes('--json');
      if (wantsHelp(args)) return help(ctx.command);
      const [{ parseAdminArgs, runAdmin }, { loadConfig }] = await Promise.all([
        import('./admin.js'),
        import('../config/index.js'),
      ]);
      return runAdmin(loadConfig(), parseAdminArgs(sub, args));
    }
    case 'deploy':
    case 'deploys':
    case 'rollback':
    case 'publish': {
      ctx.command = command;
      ctx.json = rest.includes('--json');
      if (wantsHelp(rest)) return help(command);
      const { runApiCommand } = await import('./deploy/command.js');
      return runApiCommand(command, rest);
    }
    default:
      throw usageError(`unknown command "${command}"`);
  }
}

function helpTopic(args: string[]): CommandName {
  const topic = args.join(' ');
  if (topic in usages) return topic as CommandName;
  throw usageError(`no help on "${topic}"`);
}

/**
 * The CLI's one error mapping. Usage and configuration errors: exit 2. Registry errors (a taken
 * slug, an unknown account): exit 1 with the code's message, and its JSON body on stdout under
 * --json. Start-up failures (a port in use, a data dir in use, a schema behind) and anything else:
 * exit 1 with one line and what to do about it; the stack only with LOG_LEVEL=debug, never a JSON
 * log line.
 */
function report(err: unknown, ctx: Context): number {
  const prefix = `hostplane${ctx.command ? ` ${ctx.command}` : ''}`;
  if (isAppError(err, 'USAGE')) {
    const command = err.params.command ?? ctx.command;
    if (!command) console.error(`hostplane: ${err.message}\n\n${usages['']}`);
    else
      console.error(`${prefix}: ${err.message}\n${new AppError('USAGE', { ...err.params, command }).hint}`);
    return exitCodeOf(err);
  }
  if (isAppError(err, 'CONFIG_INVALID')) {
    console.error(`${prefix}: ${err.message}\n${err.hint}`);
    return exitCodeOf(err);
  }
  // The API's own codes (no hint: their body says it all), from the admin socket, a local run or
  // the HTTP API (deploy commands: with the body's advice for agents and its upgrade link).
  const known = err instanceof CommandFailed ? err.body : isAppError(err) && !err.hint ? err.body : undefined;
  // The deploy commands' --json errors say what kind of failure it is (errorKind).
  const kind = API_COMMANDS.has(ctx.command) ? { kind: errorKind(err) } : {};
  if (known) {
    if (ctx.json) console.log(JSON.stringify({ ...known, ...kind }));
    console.error(`${prefix}: ${known.message}`);
    if (typeof known.hint_for_ai === 'string') console.error(`hint: ${known.hint_for_ai}`);
    if (typeof known.upgrade_url === 'string') console.error(`upgrade: ${known.upgrade_url}`);
    return exitCodeOf(err);
  }
  if (err instanceof LocalRefusal || err instanceof ApiUnavailable) {
    const files = err instanceof LocalRefusal && err.files ? { files: err.files } : {};
    const error = 'files' in files ? 'Files refused' : 'Failed';
    if (ctx.json) console.log(JSON.stringify({ error, message: err.message, ...kind, ...files }));
    console.error(`${prefix}: ${err.message}`);
    return exitCodeOf(err);
  }
  const startup = asStartupError(err);
  const message = startup?.message ?? messageOf(err);
  if (ctx.json) console.log(JSON.stringify(startup?.body ?? { error: 'Failed', message }));
  console.error(`${prefix}: ${message}`);
  const debug = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  if (debug && err instanceof Error && err.stack) console.error(err.stack);
  console.error(startup?.hint ?? (debug ? '' : 'Set LOG_LEVEL=debug to see the stack trace.'));
  return exitCodeOf(startup);
}

const API_COMMANDS = new Set(['deploy', 'deploys', 'rollback', 'publish']);
const ctx: Context = { command: '', json: false };
main(process.argv.slice(2), ctx).then(
  (code) => process.exit(code),
  (err: unknown) => process.exit(report(err, ctx)),
);
