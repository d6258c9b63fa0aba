// The two servers of bench/sqlite, each started on loopback with the same table (items: id, title,
// n) holding the same rows twice: once open to a bare credential ("bare": Hostplane's scoped token
// with requireUserAuth false, PocketBase's public rules) and once behind a user session ("session":
// Hostplane's token with requireUserAuth true plus an end user's X-Sqlite-User-Token, PocketBase's
// rules requiring an auth record plus that record's token). Each is a `Target` wrk can drive.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { freePort, terminate } from '../../test/support/procs.js';
import { startServer, type BenchServer } from '../support/server.js';

const execFileAsync = promisify(execFile);

/** bare: the credential alone; session: the credential plus a logged-in end user's session. */
export type Mode = 'bare' | 'session';
export const MODES: readonly Mode[] = ['bare', 'session'];

export interface Target {
  name: 'hostplane' | 'pocketbase';
  mode: Mode;
  port: number;
  pid: number;
  /**
   * Extra arguments the Lua script takes after the common ones (Hostplane: token, origin, user
   * token or "-"; PocketBase: collection, auth token or "-").
   */
  luaArgs: string[];
  /** Rows in the table now (to check that every acknowledged insert landed). */
  count(): Promise<number>;
}

/** One server process and its two targets (the same table, bare and behind a session). */
export interface Server {
  name: Target['name'];
  pid: number;
  targets: Record<Mode, Target>;
  stop(): Promise<void>;
}

const USER_PASSWORD = 'bench-user-password-1234';

/** Seeded row i (1-based): the same on both sides. */
export const seededRow = (i: number) => ({
  id: `r${String(i).padStart(14, '0')}`,
  title: `title ${i}`,
  n: i,
});

async function call(
  port: number,
  method: string,
  url: string,
  headers: Record<string, string>,
  json?: unknown,
) {
  const res = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} → ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
}

/** The session mode is real: the same call without the user's session is refused (any non-2xx). */
async function expectRefused(
  port: number,
  method: string,
  url: string,
  headers: Record<string, string>,
  json?: unknown,
) {
  const res = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  await res.arrayBuffer();
  if (res.ok) throw new Error(`${method} ${url} without a user session answered ${res.status}`);
}

async function waitFor(port: number, url: string, child: ChildProcess, what: string) {
  for (const deadline = Date.now() + 60_000; ;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} before it was ready`);
    const ok = await fetch(`http://127.0.0.1:${port}${url}`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * `hostplane serve` from the built binary, on PGlite (the standalone default) or on a throwaway
 * PostgreSQL from test/support. `nodeArgs` go to the server's Node (e.g. --cpu-prof).
 */
export async function startHostplane(opts: {
  bin: string;
  backend: 'pglite' | 'postgres';
  rows: number;
  nodeArgs: string[];
}): Promise<Server> {
  let postgres: PostgresServer | undefined;
  let server: BenchServer | undefined;
  const stop = async () => {
    await server?.stop();
    await postgres?.stop();
  };
  try {
    // No per-request log lines (PocketBase's request log is switched off likewise).
    const env: NodeJS.ProcessEnv = { LOG_LEVEL: 'warn' };
    if (opts.backend === 'postgres') {
      postgres = await startPostgres();
      env.DATABASE_URL = await createDatabase(postgres.url);
    }
    server = await startServer({
      bin: opts.bin,
      name: 'sqlite',
      env,
      localhostUrls: true,
      nodeArgs: opts.nodeArgs,
      runInDataDir: true,
    });
    const { port } = server;
    const { apiKey } = await server.createSite('bench');
    const origin = `http://bench.localhost:${port}`;
    const targets = {} as Record<Mode, Target>;
    for (const mode of MODES) {
      const install = await call(
        port,
        'POST',
        '/api/v1/sqlite/auth/install',
        { 'x-api-key': apiKey },
        {
          path: mode === 'bare' ? 'data/bench.sqlite' : 'data/bench-session.sqlite',
          name: `bench ${mode}`,
          requireUserAuth: mode === 'session',
        },
      );
      const token = install.token as string;
      const scoped: Record<string, string> = { 'x-sqlite-token': token, origin };
      let userToken = '-';
      if (mode === 'session') {
        // Registration is never public: the master key registers the database's first user (who
        // becomes its admin) and then the end user the bench logs in as (role user).
        for (const email of ['owner@example.com', 'user@example.com']) {
          await call(
            port,
            'POST',
            '/api/v1/sqlite/auth/register',
            { ...scoped, 'x-api-key': apiKey },
            {
              email,
              password: USER_PASSWORD,
            },
          );
        }
        const login = await call(port, 'POST', '/api/v1/sqlite/auth/login', scoped, {
          email: 'user@example.com',
          password: USER_PASSWORD,
        });
        userToken = login.userToken as string;
        scoped['x-sqlite-user-token'] = userToken;
      }
      await call(port, 'POST', '/api/v1/sqlite/exec', scoped, {
        sql: 'CREATE TABLE items (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, n INTEGER NOT NULL)',
      });
      // The batch route takes up to 500 statements, one transaction each batch.
      for (let first = 1; first <= opts.rows; first += 500) {
        const statements = [];
        for (let i = first; i < Math.min(first + 500, opts.rows + 1); i++) {
          const row = seededRow(i);
          statements.push({
            sql: 'INSERT INTO items (id, title, n) VALUES (?, ?, ?)',
            params: [row.id, row.title, row.n],
          });
        }
        await call(port, 'POST', '/api/v1/sqlite/batch', scoped, { statements });
      }
      if (mode === 'session') {
        const { 'x-sqlite-user-token': _session, ...withoutSession } = scoped;
        await expectRefused(port, 'POST', '/api/v1/sqlite/query', withoutSession, {
          sql: 'SELECT count(*) AS c FROM items',
        });
      }
      targets[mode] = {
        name: 'hostplane',
        mode,
        port,
        pid: server.pid,
        luaArgs: [token, origin, userToken],
        async count() {
          const res = await call(port, 'POST', '/api/v1/sqlite/query', scoped, {
            sql: 'SELECT count(*) AS c FROM items',
          });
          return (res.rows as { c: number }[])[0]!.c;
        },
      };
    }
    return { name: 'hostplane', pid: server.pid, targets, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** PocketBase (.cache/tools/pocketbase, built by test/tools/pocketbase/build.sh when missing or stale). */
export async function startPocketbase(opts: { repo: string; rows: number }): Promise<Server> {
  const bin = path.join(opts.repo, '.cache/tools/pocketbase');
  // The script only checks the build info when the binary is current (well under a second).
  await execFileAsync('bash', [path.join(opts.repo, 'test/tools/pocketbase/build.sh')], {
    maxBuffer: 1 << 24,
  });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pocketbase-bench-sqlite-'));
  let server: ChildProcess | undefined;
  const stop = async () => {
    if (server) await terminate(server, 'SIGTERM', 10_000);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const email = 'bench@example.com';
    const password = 'bench-password-1234';
    // Every folder inside the throwaway one: by default the JS migrations and hooks folders sit
    // beside the data dir, and automigrate writes a migration file there for each collection change.
    const dirs = [
      `--dir=${path.join(dataDir, 'pb_data')}`,
      `--migrationsDir=${path.join(dataDir, 'pb_migrations')}`,
      `--hooksDir=${path.join(dataDir, 'pb_hooks')}`,
      `--publicDir=${path.join(dataDir, 'pb_public')}`,
      '--automigrate=false',
    ];
    await execFileAsync(bin, ['superuser', 'upsert', email, password, ...dirs]);
    server = spawn(bin, ['serve', '--http', `127.0.0.1:${port}`, ...dirs], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitFor(port, '/api/health', server, 'pocketbase');
    const auth = await call(
      port,
      'POST',
      '/api/collections/_superusers/auth-with-password',
      {},
      {
        identity: email,
        password,
      },
    );
    const admin = { authorization: auth.token as string };
    // Request logs off (Hostplane runs with LOG_LEVEL=warn); batch on, for the seeding only.
    await call(port, 'PATCH', '/api/settings', admin, {
      logs: { maxDays: 0 },
      batch: { enabled: true, maxRequests: 500, timeout: 60, maxBodySize: 0 },
    });
    // An end user: a record of the built-in `users` auth collection, logged in with its password.
    const userEmail = 'user@example.com';
    await call(port, 'POST', '/api/collections/users/records', admin, {
      email: userEmail,
      password: USER_PASSWORD,
      passwordConfirm: USER_PASSWORD,
    });
    const userAuth = await call(
      port,
      'POST',
      '/api/collections/users/auth-with-password',
      {},
      {
        identity: userEmail,
        password: USER_PASSWORD,
      },
    );
    const userToken = userAuth.token as string;
    const pid = server.pid!;
    const targets = {} as Record<Mode, Target>;
    for (const mode of MODES) {
      // bare: public view/list/create rules ('' = anyone), the records API without authentication;
      // session: only requests carrying an auth record's token (PocketBase's "authenticated" rule).
      const collection = mode === 'bare' ? 'items' : 'items_session';
      const rule = mode === 'bare' ? '' : '@request.auth.id != ""';
      await call(port, 'POST', '/api/collections', admin, {
        name: collection,
        type: 'base',
        listRule: rule,
        viewRule: rule,
        createRule: rule,
        fields: [
          { name: 'title', type: 'text', required: true },
          { name: 'n', type: 'number', onlyInt: true },
        ],
      });
      for (let first = 1; first <= opts.rows; first += 500) {
        const requests = [];
        for (let i = first; i < Math.min(first + 500, opts.rows + 1); i++) {
          requests.push({
            method: 'POST',
            url: `/api/collections/${collection}/records`,
            body: seededRow(i),
          });
        }
        await call(port, 'POST', '/api/batch', admin, { requests });
      }
      const headers: Record<string, string> = mode === 'bare' ? {} : { authorization: userToken };
      if (mode === 'session') {
        await expectRefused(port, 'GET', `/api/collections/${collection}/records/${seededRow(1).id}`, {});
        await expectRefused(port, 'POST', `/api/collections/${collection}/records`, {}, seededRow(0));
      }
      targets[mode] = {
        name: 'pocketbase',
        mode,
        port,
        pid,
        luaArgs: [collection, mode === 'bare' ? '-' : userToken],
        async count() {
          const res = await call(port, 'GET', `/api/collections/${collection}/records?perPage=1`, headers);
          return res.totalItems as number;
        },
      };
    }
    return { name: 'pocketbase', pid, targets, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** CPU seconds (user + system, all threads) a process has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
