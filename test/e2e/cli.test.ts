import { existsSync } from 'node:fs';
import http from 'node:http';
import { readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  apiRequest,
  apiUpload,
  bin,
  cli,
  newInstance,
  siteRequest,
  startServe,
  stopServe,
  type Instance,
} from '../support/cli.js';
import { createDatabase } from '../support/postgres.js';
import { freePort } from '../support/procs.js';

// The CLI is a contract users and other tools rely on: these tests run the built binary as a user
// would, against a running `hostplane serve` (helpers in ../support/cli.ts).

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` (make test does) first`);
});

describe('hostplane serve + admin CLI on embedded defaults (PGlite)', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  });

  let apiKey = '';
  let accountId = 0;

  it('admin create-site --json prints one object with the contract keys, while the server runs', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'demo',
      '--email',
      'owner@example.com',
      '--plan',
      'free',
      '--json',
    ]);
    expect(out.code).toBe(0);
    const created = JSON.parse(out.stdout);
    expect(Object.keys(created).sort()).toEqual(['accountId', 'apiKey', 'plan', 'siteId', 'siteUrl', 'slug']);
    expect(created).toMatchObject({
      slug: 'demo',
      plan: 'free',
      siteUrl: `http://demo.localhost:${instance.port}`,
    });
    expect(typeof created.accountId).toBe('number');
    expect(typeof created.siteId).toBe('number');
    apiKey = created.apiKey;
    accountId = created.accountId;
  });

  it('the key publishes a page that the site host serves', async () => {
    const up = await apiUpload(instance, apiKey, { path: 'index.html', content: '<h1>hi</h1>' });
    expect(up.status).toBe(200);
    const page = await siteRequest(instance, 'demo');
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>hi</h1>');
  });

  it('admin session mints a bearer token that POST /api/keys/generate-temp accepts', async () => {
    const out = await cli(instance, ['admin', 'session', '--email', 'owner@example.com', '--json']);
    expect(out.code).toBe(0);
    const session = JSON.parse(out.stdout);
    expect(Object.keys(session).sort()).toEqual(['expiresAt', 'token']);
    expect(new Date(session.expiresAt).getTime()).toBeGreaterThan(Date.now());
    const res = await apiRequest(instance, '/api/keys/generate-temp', {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}` },
      json: {},
    });
    expect(res.status).toBe(200);
    const temp = await res.json();
    const list = await apiRequest(instance, '/api/v1/files/list', {
      headers: { 'x-api-key': temp.temp_api_key },
    });
    expect(list.status).toBe(200);
  });

  it('admin invite prints a one-time link that sets the password; the owner then signs in', async () => {
    const out = await cli(instance, [
      'admin',
      'invite',
      '--email',
      'Invitee@Example.com',
      '--plan',
      'standard',
      '--json',
    ]);
    expect(out.code).toBe(0);
    const invited = JSON.parse(out.stdout);
    expect(Object.keys(invited).sort()).toEqual(['accountId', 'email', 'expiresAt', 'link', 'mailed']);
    expect(invited).toMatchObject({ email: 'invitee@example.com', mailed: false });
    expect(invited.link).toMatch(/^http:\/\/localhost:\d+\/console\/invite#token=hp_invite_[\w-]{43}$/);
    const token = new URL(invited.link).hash.slice('#token='.length);
    const accept = await apiRequest(instance, '/api/v1/account/invitations/accept', {
      method: 'POST',
      json: { token, password: 'a long and unusual passphrase' },
    });
    expect(accept.status).toBe(200);
    const signIn = await apiRequest(instance, '/api/v1/account/sign-in', {
      method: 'POST',
      json: { email: 'invitee@example.com', password: 'a long and unusual passphrase' },
    });
    expect(signIn.status).toBe(200);
    // Once the password is set, another invitation is refused with the registry's message.
    const again = await cli(instance, ['admin', 'invite', '--email', 'invitee@example.com']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already has an account with a password');
  });

  it('a second site of the same email joins the existing account', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'second',
      '--email',
      'OWNER@example.com',
      '--json',
    ]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout).accountId).toBe(accountId);
    const other = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'third',
      '--email',
      'other@example.com',
      '--json',
    ]);
    expect(JSON.parse(other.stdout).accountId).not.toBe(accountId);
  });

  it('a taken slug or a bad flag fails with a non-zero exit and changes nothing', async () => {
    const taken = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'demo',
      '--email',
      'x@example.com',
      '--json',
    ]);
    expect(taken.code).toBe(1);
    expect(JSON.parse(taken.stdout).message).toMatch(/already taken/);
    const badSlug = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'Not_A_Slug',
      '--email',
      'x@example.com',
      '--json',
    ]);
    expect(badSlug.code).not.toBe(0);
    const badPlan = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'okslug',
      '--email',
      'x@example.com',
      '--plan',
      'gold',
    ]);
    expect(badPlan.code).toBe(2);
    const unknown = await cli(instance, ['admin', 'session', '--email', 'nobody@example.com', '--json']);
    expect(unknown.code).toBe(1);
    expect((await siteRequest(instance, 'okslug')).status).toBe(404);
  });

  it('keeps the admin secret and socket owner-only, and refuses a wrong secret', async () => {
    const secretFile = path.join(instance.dataDir, 'admin.secret');
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(instance.dataDir, 'admin.sock'))).mode & 0o777).toBe(0o600);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          socketPath: path.join(instance.dataDir, 'admin.sock'),
          path: '/session',
          method: 'POST',
          headers: { 'x-admin-secret': 'f'.repeat(64) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ email: 'owner@example.com' }));
    });
    expect(status).toBe(401);
  });

  it('never writes a key or token into the server log', async () => {
    const log = instance.serverLog.join('');
    expect(log).toContain('request completed');
    expect(log).not.toContain(apiKey);
  });

  it('refuses a second server (and migrate) on the same data dir while the first runs: one line, a hint', async () => {
    const pid = String(instance.server?.pid);
    for (const args of [['serve'], ['migrate']]) {
      const out = await cli({ env: { ...instance.env, PORT: String(await freePort()) } }, args);
      expect(out.code).toBe(1);
      expect(out.stderr).toBe(
        `hostplane ${args[0]}: the embedded database in ${path.join(instance.dataDir, 'pglite')} is in use by process ${pid}\n` +
          `Stop process ${pid} first, or point HOSTPLANE_DATA_DIR at another folder.\n`,
      );
    }
  });

  it('keeps sites, keys and files across a restart', async () => {
    expect(await stopServe(instance)).toBe(0);
    await startServe(instance);
    const page = await siteRequest(instance, 'demo');
    expect(await page.text()).toBe('<h1>hi</h1>');
    const list = await apiRequest(instance, '/api/v1/files/list', { headers: { 'x-api-key': apiKey } });
    expect(list.status).toBe(200);
  });

  it('works without a running server too, and the server then sees the site', async () => {
    await stopServe(instance);
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'offline',
      '--email',
      'off@example.com',
      '--json',
    ]);
    expect(out.code).toBe(0);
    await startServe(instance);
    const { apiKey: offlineKey } = JSON.parse(out.stdout);
    const list = await apiRequest(instance, '/api/v1/files/list', { headers: { 'x-api-key': offlineKey } });
    expect(list.status).toBe(200);
    expect((await list.json()).storage_folder.slug).toBe('offline');
  });

  it('reads the admin secret only from the data dir', async () => {
    const secret = await readFile(path.join(instance.dataDir, 'admin.secret'), 'utf8');
    expect(secret.trim()).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('admin CLI against PostgreSQL while the server runs', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await newInstance({ DATABASE_URL: await createDatabase(inject('postgresUrl')) });
    await startServe(instance);
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  });

  it('creates a site the running server serves', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'pgsite',
      '--email',
      'pg@example.com',
      '--plan',
      'standard',
      '--json',
    ]);
    expect(out.code).toBe(0);
    const { apiKey, plan } = JSON.parse(out.stdout);
    expect(plan).toBe('standard');
    const up = await apiUpload(instance, apiKey, { path: 'index.html', content: 'on postgres' });
    expect(up.status).toBe(200);
    expect(await (await siteRequest(instance, 'pgsite')).text()).toBe('on postgres');
  });
});

describe('the command line: help, version, usage errors, failures', () => {
  const env = { env: { ...process.env, HOSTPLANE_DATA_DIR: '/nonexistent/hostplane-cli-test' } };

  it('--help and --version at the top and --help on every command exit 0 and touch nothing', async () => {
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(await cli(env, ['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` });
    for (const args of [
      ['--help'],
      ['-h'],
      ['serve', '--help'],
      ['serve', '--role', 'edge', '-h'],
      ['migrate', '--help'],
      ['admin', '--help'],
      ['admin', 'create-site', '--help'],
      ['admin', 'session', '--help'],
      ['admin', 'invite', '--help'],
      ['help', 'admin', 'session'],
    ]) {
      const out = await cli(env, args);
      expect(out.code, args.join(' ')).toBe(0);
      expect(out.stdout).toMatch(/^Usage: hostplane/);
      expect(out.stderr).toBe('');
    }
    // Above all, `migrate --help` does not migrate: no data dir was made.
    expect(existsSync('/nonexistent/hostplane-cli-test')).toBe(false);
  });

  it('usage errors exit 2 with the problem and where to read the usage', async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /^hostplane: no command given\n\nUsage: hostplane/],
      [['launch'], /^hostplane: unknown command "launch"/],
      [['deploy'], /^hostplane deploy: missing DIR\nRun `hostplane deploy --help`/],
      [['deploys', '--api-key', 'k'], /^hostplane deploys: the API key is read from HOSTPLANE_API_KEY only/],
      [['serve', '--role', 'nope'], /^hostplane serve: unknown role "nope".*\nRun `hostplane serve --help`/],
      [['serve', '--port', '1'], /^hostplane serve: Unknown option '--port'/],
      [['migrate', 'now'], /^hostplane migrate: migrate takes no arguments/],
      [['admin'], /^hostplane admin: missing the admin command/],
      [['admin', 'delete-site'], /^hostplane admin: unknown admin command "delete-site"/],
      [
        ['admin', 'create-site', '--slug', 'x'],
        /--email is required\nRun `hostplane admin create-site --help`/,
      ],
      [['admin', 'session', '--email', 'a@example.com', '--slug', 'x'], /Unknown option '--slug'/],
    ];
    for (const [args, stderr] of cases) {
      const out = await cli(env, args);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stderr).toMatch(stderr);
      expect(out.stdout).toBe('');
    }
  });

  it('a port in use is one line and a hint, not a log line with a stack trace', async () => {
    const instance = await newInstance();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(instance.port, '127.0.0.1', resolve));
    try {
      const out = await cli(instance, ['serve']);
      expect(out.code).toBe(1);
      expect(out.stderr).toBe(
        `hostplane serve: port ${instance.port} on 127.0.0.1 is already in use\n` +
          'Stop the process that uses it, or set PORT to a free port.\n',
      );
      // The same for the metrics port, naming its own setting.
      const metrics = { env: { ...instance.env, PORT: '0', HOSTPLANE_METRICS_PORT: String(instance.port) } };
      expect((await cli(metrics, ['serve'])).stderr).toMatch(
        /or set HOSTPLANE_METRICS_PORT to a free port\.\n$/,
      );
    } finally {
      blocker.close();
      await rm(instance.dataDir, { recursive: true, force: true });
    }
  });

  it('migrate on a new embedded data dir leaves a current schema; a second run has nothing to do', async () => {
    const instance = await newInstance();
    try {
      const first = await cli(instance, ['migrate']);
      expect(first.code, first.stderr).toBe(0);
      const second = await cli(instance, ['migrate']);
      expect(second).toMatchObject({ code: 0, stderr: '' });
      expect(second.stdout).toMatch(
        /^schema already current on PGlite in .* \(at \d{4}_\w+\); nothing to apply\n$/,
      );
    } finally {
      await rm(instance.dataDir, { recursive: true, force: true });
    }
  });
});

describe('the schema on PostgreSQL: only migrate and serve (role all) migrate', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await newInstance({
      DATABASE_URL: await createDatabase(inject('postgresUrl')),
      HOSTPLANE_SCHEMA_WAIT_SECONDS: '1',
    });
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  });

  it('serve --role api and admin refuse a database behind, saying to run migrate', async () => {
    const api = await cli(instance, ['serve', '--role', 'api']);
    expect(api.code).toBe(1);
    expect(api.stderr).toMatch(
      /^hostplane serve: the database schema is not current after waiting 1 s: \d+ of \d+ migrations not applied \(0000_init.*\)\nRun `hostplane migrate` against this database/,
    );
    const admin = await cli(instance, ['admin', 'session', '--email', 'a@example.com', '--json']);
    expect(admin.code).toBe(1);
    expect(JSON.parse(admin.stdout).message).toMatch(/schema is not current/);
  });

  it('migrate applies every migration once; then api starts at once', async () => {
    const first = await cli(instance, ['migrate']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toMatch(/^applied \d+ migration\(s\) on PostgreSQL: 0000_init/);
    expect((await cli(instance, ['migrate'])).stdout).toMatch(/^schema already current on PostgreSQL/);
    await startServe(instance, ['--role', 'api']);
    expect((await apiRequest(instance, '/readyz')).status).toBe(200);
  });
});
