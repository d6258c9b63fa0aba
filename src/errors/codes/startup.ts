import { define, type WithMessage } from '../define.js';

// Never answered over HTTP: what a process reports when it cannot start, or when the command line
// is wrong. The CLI prints the message and the hint, and maps each code to an exit code
// (src/cli/errors.ts); `error` is what `--json` prints for them.
const FAILED = { status: 500, error: 'Failed', http: false } as const;

/** Who holds a data dir, in the refusal's words. */
const holder = (pid: number) => (pid > 0 ? `process ${pid}` : 'another process');

/** Codes of start-up and of the command line: each says what went wrong and what to do about it. */
export const startupErrors = {
  USAGE: define<{ message: string; command?: string }>({
    ...FAILED,
    message: (p) => p.message,
    hint: (p) => `Run \`hostplane ${p.command ? `${p.command} ` : ''}--help\` for usage.`,
    description: 'The command line is wrong (an unknown command, flag or value)',
  }),
  CONFIG_INVALID: define<WithMessage>({
    ...FAILED,
    message: (p) => p.message,
    hint: () => 'The settings are listed in docs/operators/configuration.md.',
    description: 'An environment variable is missing, malformed or contradicts another',
  }),
  DATA_DIR_LOCKED: define<{ pid: number; dir: string }>({
    ...FAILED,
    message: (p) => `the embedded database in ${p.dir} is in use by ${holder(p.pid)}`,
    hint: (p) => `Stop ${holder(p.pid)} first, or point HOSTPLANE_DATA_DIR at another folder.`,
    description: 'Another live process holds the embedded database (only one may open it)',
  }),
  SCHEMA_NOT_CURRENT: define<{ pending: string[]; total: number; waitedMs?: number }>({
    ...FAILED,
    message: (p) => {
      const waited = p.waitedMs ? ` after waiting ${Math.round(p.waitedMs / 1000)} s` : '';
      return (
        `the database schema is not current${waited}: ${p.pending.length} of ${p.total} ` +
        `migrations not applied (${p.pending.join(', ')})`
      );
    },
    hint: () =>
      'Run `hostplane migrate` against this database (the Helm chart runs it before every upgrade).',
    description: 'The database lacks migrations this build needs, and this process may not apply them',
  }),
  PORT_IN_USE: define<{
    port: number | undefined;
    address: string | undefined;
    variable: 'PORT' | 'HOSTPLANE_METRICS_PORT';
  }>({
    ...FAILED,
    message: (p) => `port ${p.port} on ${p.address} is already in use`,
    hint: (p) => `Stop the process that uses it, or set ${p.variable} to a free port.`,
    description: 'A port the process listens on is taken',
  }),
  PORT_NOT_ALLOWED: define<{ port: number | undefined }>({
    ...FAILED,
    message: (p) => `not allowed to listen on port ${p.port}`,
    hint: () => 'Set PORT to a port above 1023.',
    description: 'The process may not listen on a privileged port',
  }),
  DATABASE_UNREACHABLE: define<WithMessage>({
    ...FAILED,
    message: (p) => `cannot reach the database: ${p.message}`,
    hint: () => 'Check DATABASE_URL and that PostgreSQL is running (unset it to use the embedded database).',
    description: 'The database refused or did not answer a command that does not wait for it',
  }),
  NATIVE_BUILD_MISSING: define<{ file: string }>({
    ...FAILED,
    message: (p) => `the SQLite engine's native build is missing (${p.file})`,
    hint: () =>
      'Run `make install` (native/build.sh), or set HOSTPLANE_SQLITE_NATIVE_DIR to the folder that holds it.',
    description: 'The custom better-sqlite3 binding or the guard extension is not where the process looks',
  }),
} as const;
