import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  appendFileSync,
  chownSync,
  constants,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { captureOutput, exited, freePort, waitUntilReady } from './procs.js';

export interface PostgresServer {
  /** Superuser URL to the `postgres` database (trust auth, no password). */
  url: string;
  /** Shuts the server down, keeping its data: `fast` or `immediate` as in `pg_ctl stop -m`. */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data; resolves once it answers. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const HINT = 'run `bash test/tools/build.sh` to install PostgreSQL';
const OS_USER = 'postgres';

const isExecutable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The folder holding initdb and postgres: newest /usr/lib/postgresql/<v>/bin, else from PATH. */
function findBinDir(): string {
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
  try {
    versions = readdirSync(root).sort((a, b) => Number(b) - Number(a) || b.localeCompare(a));
  } catch {
    // Not a Debian layout.
  }
  for (const version of versions) {
    const dir = path.join(root, version, 'bin');
    if (isExecutable(path.join(dir, 'initdb')) && isExecutable(path.join(dir, 'postgres'))) return dir;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, 'initdb')) && isExecutable(path.join(dir, 'postgres'))) return dir;
  }
  throw new Error(`PostgreSQL server binaries (initdb, postgres) not found: ${HINT}`);
}

interface RunAs {
  uid: number;
  gid: number;
}

/**
 * initdb and postgres refuse to run as root: when we are root, they run as the `postgres`
 * system user (created when missing).
 */
function runAsUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (): RunAs | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', OS_USER], { encoding: 'utf8', stdio: 'pipe' }).trim());
      const gid = Number(execFileSync('id', ['-g', OS_USER], { encoding: 'utf8', stdio: 'pipe' }).trim());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const existing = lookup();
  if (existing) return existing;
  const created = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', OS_USER], {
    encoding: 'utf8',
  });
  const user = lookup();
  if (!user) throw new Error(`could not create the '${OS_USER}' user: ${created.stderr || created.error}`);
  return user;
}

/** The command line, wrapped in `runuser -u postgres --` when we are root. */
const command = (runAs: RunAs | undefined, file: string, args: string[]): [string, string[]] =>
  runAs ? ['runuser', ['-u', OS_USER, '--', file, ...args]] : [file, args];

async function canQuery(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The postmaster's pid, from the first line of postmaster.pid. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

/**
 * Starts a throwaway PostgreSQL cluster on 127.0.0.1 (or `host`) in a fresh temp folder (trust auth,
 * durability off unless `durable`: then a commit survives an immediate shutdown). `stop()` kills it
 * and deletes the folder.
 */
export async function startPostgres(
  options: { durable?: boolean; host?: string } = {},
): Promise<PostgresServer> {
  const host = options.host ?? '127.0.0.1';
  const binDir = findBinDir();
  const runAs = runAsUser();
  const baseDir = mkdtempSync(path.join(tmpdir(), 'hostplane-pg-'));
  const dataDir = path.join(baseDir, 'data');
  const cleanupDir = (): void => rmSync(baseDir, { recursive: true, force: true });
  try {
    if (runAs) chownSync(baseDir, runAs.uid, runAs.gid);
    // cwd: the postgres user may not be allowed into the current folder.
    const [initdbFile, initdbArgs] = command(runAs, path.join(binDir, 'initdb'), [
      '-D',
      dataDir,
      '--auth=trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    const init = spawnSync(initdbFile, initdbArgs, { cwd: baseDir, encoding: 'utf8' });
    if (init.error || init.status !== 0) {
      throw new Error(`initdb failed (${init.error?.message ?? `exit ${init.status}`}):\n${init.stderr}`);
    }
    // Listening beyond loopback (pods of the test node connect from their own addresses).
    if (host !== '127.0.0.1')
      appendFileSync(path.join(dataDir, 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n');
  } catch (err) {
    cleanupDir();
    throw err;
  }

  /** Runs the postmaster on `port`; resolves once it answers (rejects with its output if not). */
  const launch = async (port: number) => {
    const [file, args] = command(runAs, path.join(binDir, 'postgres'), [
      '-D',
      dataDir,
      '-k',
      baseDir,
      '-h',
      host,
      '-p',
      String(port),
      '-c',
      'fsync=off',
      // Durable commits where a test kills the server and counts what it acknowledged.
      ...(options.durable ? [] : ['-c', 'synchronous_commit=off']),
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=200',
      '-c',
      'logging_collector=off',
    ]);
    const child = spawn(file, args, { cwd: baseDir, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = captureOutput(child);
    const url = `postgres://postgres@${host}:${port}/postgres`;
    /** Shuts the postmaster down (SIGINT: `pg_ctl stop -m fast`, SIGQUIT: `-m immediate`). */
    const halt = async (sig: NodeJS.Signals = 'SIGQUIT'): Promise<void> => {
      // When run through runuser, `child` is runuser, which exits with the postmaster.
      const pid = postmasterPid(dataDir) ?? child.pid;
      const done = exited(child);
      signal(pid, sig);
      const timer = setTimeout(() => {
        signal(pid, 'SIGKILL');
        child.kill('SIGKILL');
      }, 5_000);
      await done;
      clearTimeout(timer);
    };
    try {
      await waitUntilReady('postgres', child, output, () => canQuery(url));
    } catch (err) {
      await halt();
      throw Object.assign(err as Error, { portTaken: /already in use/i.test(output()) });
    }
    return { url, halt, pid: () => postmasterPid(dataDir) ?? child.pid };
  };

  // Should the test run die without calling stop(), do not leave a server behind.
  const onExit = (): void => {
    signal(postmasterPid(dataDir), 'SIGQUIT');
    cleanupDir();
  };
  process.once('exit', onExit);

  // The free port may be taken between probing and binding: retry a few times.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    let running: Awaited<ReturnType<typeof launch>> | undefined;
    try {
      running = await launch(port);
    } catch (err) {
      if (attempt < 3 && (err as { portTaken?: boolean }).portTaken) continue;
      process.removeListener('exit', onExit);
      cleanupDir();
      throw err;
    }
    let stopped: Promise<void> | undefined;
    return {
      url: running.url,
      async halt(mode = 'immediate') {
        await running?.halt(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
        running = undefined;
      },
      async resume() {
        running ??= await launch(port);
      },
      stop: () =>
        (stopped ??= (async () => {
          process.removeListener('exit', onExit);
          await running?.halt();
          cleanupDir();
        })()),
    };
  }
}

/**
 * Creates a fresh, uniquely named database on the server of `adminUrl` and returns its URL.
 */
export async function createDatabase(adminUrl: string, name?: string): Promise<string> {
  const dbName = name ?? `test_${randomBytes(6).toString('hex')}`;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(dbName)) throw new Error(`invalid database name: ${dbName}`);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${dbName}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  return url.toString();
}
