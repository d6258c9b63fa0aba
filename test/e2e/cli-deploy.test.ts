import { existsSync } from 'node:fs';
import { rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { flakyProxy, getOnHost, siteFolder, writeFiles } from '../support/deploy-folder.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { freePort } from '../support/procs.js';

// `hostplane deploy`, `deploys`, `rollback` and `publish` as a user runs them (the built binary,
// not on a TTY) against a running `hostplane serve`, with real folders in a temp dir.

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
});

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 1, 2, 3]);

/** The server on `instance`, a site on it, and the CLI with that site's key. */
async function siteOn(instance: Instance, slug: string) {
  const created = await cli(instance, [
    'admin',
    'create-site',
    '--slug',
    slug,
    '--email',
    `${slug}@example.com`,
    '--json',
  ]);
  expect(created.code, created.stderr).toBe(0);
  const apiKey = JSON.parse(created.stdout).apiKey as string;
  const env = {
    ...instance.env,
    HOSTPLANE_API_KEY: apiKey,
    HOSTPLANE_API_URL: `http://localhost:${instance.port}`,
  };
  return {
    apiKey,
    run: (args: string[], extraEnv: NodeJS.ProcessEnv = {}) => cli({ env: { ...env, ...extraEnv } }, args),
    page: (pathAndQuery = '/') => getOnHost(instance.port, `${slug}.localhost`, pathAndQuery),
    liveUrl: `http://${slug}.localhost:${instance.port}`,
  };
}

describe('hostplane deploy on embedded defaults (PGlite)', () => {
  let instance: Instance;
  let site: Awaited<ReturnType<typeof siteOn>>;
  let dir: string;
  const ids: string[] = [];

  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
    site = await siteOn(instance, 'demo');
    dir = await siteFolder({
      'index.html': '<h1>v1</h1>',
      'about.html': '<p>about v1</p>',
      'css/site.css': 'body{color:red}',
      'blog/2024/first-post.html': '<article>first</article>',
      'img/logo.png': PNG,
      'data/app.db': 'SQLite format 3\0',
      'notes.md': '# not for the site',
      'drafts/wip.html': '<p>secret</p>',
      'drafts/keep.html': '<p>kept by !</p>',
      '.git/config': '[core]',
      'node_modules/x/index.js': 'module.exports = 1',
      '.DS_Store': 'junk',
      '.hostplaneignore': '# local only\n*.md\ndrafts/*\n!drafts/keep.html\n',
    });
    await symlink(os.tmpdir(), path.join(dir, 'outside'));
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  const deployIdOf = (stdout: string) => /deploy ([a-z2-7]{12}):/.exec(stdout)![1]!;

  it('first deploy: skips what it must, prints progress lines and the live URL; the files are served', async () => {
    const out = await site.run(['deploy', dir]);
    expect(out.code, out.stderr).toBe(0);
    // 6 files: index, about, css, post, logo, drafts/keep (the rest ignored or skipped).
    expect(out.stdout).toContain('6 files to upload');
    expect(out.stdout).toMatch(
      /skipped 1 path \(data\/app\.db\): SQLite database files are never part of a deploy/,
    );
    expect(out.stdout).toMatch(/skipped 1 path \(outside\): symbolic links to places outside the folder/);
    // Not a TTY: plain lines, one per tenth of the files (here every file), no carriage returns.
    const lines = out.stdout.split('\n').filter((l) => l.startsWith('uploaded '));
    expect(lines).toHaveLength(6);
    expect(lines.at(-1)).toMatch(/^uploaded 6\/6 files, .* \(100%\)$/);
    expect(out.stdout).not.toContain('\r');
    expect(out.stdout).toContain(`is live in`);
    expect(out.stdout.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `: ${site.liveUrl} \\(this deploy: http://[a-z2-7]{12}--demo\\.localhost:${instance.port}\\)$`,
      ),
    );
    ids.push(deployIdOf(out.stdout));

    expect(await site.page('/')).toEqual({ status: 200, text: '<h1>v1</h1>' });
    expect((await site.page('/blog/2024/first-post.html')).text).toBe('<article>first</article>');
    expect((await site.page('/img/logo.png')).status).toBe(200);
    expect((await site.page('/drafts/keep.html')).status).toBe(200);
    for (const gone of ['/notes.md', '/drafts/wip.html', '/.git/config', '/node_modules/x/index.js'])
      expect((await site.page(gone)).status, gone).toBe(404);
  });

  it('an unchanged re-run uploads nothing; changing one file uploads one', async () => {
    const again = await site.run(['deploy', dir]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('0 files to upload (0 B), 6 already on the server');
    ids.push(deployIdOf(again.stdout));

    await writeFile(path.join(dir, 'index.html'), '<h1>v2</h1>');
    const changed = await site.run(['deploy', dir]);
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toContain('1 file to upload (11 B), 5 already on the server');
    expect(changed.stdout).toMatch(/^uploaded 1\/1 file, 11 B of 11 B \(100%\)$/m);
    ids.push(deployIdOf(changed.stdout));
    expect((await site.page('/')).text).toBe('<h1>v2</h1>');
  });

  it('--dry-run compares with the live deploy and changes nothing', async () => {
    await writeFile(path.join(dir, 'about.html'), '<p>about v3</p>');
    await writeFile(path.join(dir, 'new.html'), '<p>new</p>');
    const before = await site.run(['deploys', '--json']);
    const out = await site.run(['deploy', dir, '--dry-run']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(
      `compared with the live deploy ${ids[2]}: 1 added, 1 changed, 0 removed, 5 unchanged`,
    );
    expect(out.stdout).toContain('  + new.html');
    expect(out.stdout).toContain('  ~ about.html');
    expect(out.stdout).toContain('would upload at most 2 files (25 B); nothing was uploaded or changed');
    const after = await site.run(['deploys', '--json']);
    expect(JSON.parse(after.stdout).deploys).toEqual(JSON.parse(before.stdout).deploys);
    expect((await site.page('/about.html')).text).toBe('<p>about v1</p>');
    expect((await site.page('/new.html')).status).toBe(404);
  });

  it('--draft prints a preview URL serving the new content; the live site is unchanged until publish', async () => {
    const out = await site.run(['deploy', dir, '--draft']);
    expect(out.code, out.stderr).toBe(0);
    const id = deployIdOf(out.stdout);
    const previewHost = `${id}--demo.localhost`;
    expect(out.stdout).toContain(`Preview: http://${previewHost}:${instance.port}`);
    expect(out.stdout).toContain(`hostplane publish ${id}`);
    expect((await getOnHost(instance.port, previewHost, '/about.html')).text).toBe('<p>about v3</p>');
    expect((await getOnHost(instance.port, previewHost, '/new.html')).text).toBe('<p>new</p>');
    expect((await site.page('/about.html')).text).toBe('<p>about v1</p>');
    expect((await site.page('/new.html')).status).toBe(404);

    const published = await site.run(['publish', id]);
    expect(published.code, published.stderr).toBe(0);
    expect(published.stdout).toContain(`Published: deploy ${id}`);
    expect(published.stdout).toContain(`is live at ${site.liveUrl}`);
    expect((await site.page('/about.html')).text).toBe('<p>about v3</p>');
    ids.push(id);
  });

  it('deploys lists the history, newest first, with the live marker and the key that made each', async () => {
    const out = await site.run(['deploys']);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+CREATED \(UTC\)\s+FILES\s+SIZE\s+BY$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([...ids].reverse());
    expect(lines[1]).toMatch(/published .* key hp_\S+… +\* live$/);
    expect(lines.filter((l) => l.includes('* live'))).toHaveLength(1);
    const json = JSON.parse((await site.run(['deploys', '--json'])).stdout);
    expect(json.live_deploy_id).toBe(ids[3]);
    // The CLI names itself (User-Agent hostplane-cli/…): the history says it made each deploy.
    expect(new Set(json.deploys.map((d: { client: string }) => d.client))).toEqual(new Set(['cli']));
  });

  it('rollback without ID steps back to the previous published deploy; with an ID restores that one', async () => {
    const back = await site.run(['rollback']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toContain(`Rolled back: deploy ${ids[2]}`);
    expect(back.stdout).toContain(`is live at ${site.liveUrl}`);
    expect((await site.page('/about.html')).text).toBe('<p>about v1</p>');
    expect((await site.page('/')).text).toBe('<h1>v2</h1>');

    const first = await site.run(['rollback', ids[0]!, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ id: ids[0], live: true, live_url: site.liveUrl });
    expect((await site.page('/')).text).toBe('<h1>v1</h1>');
  });

  it('--json prints one result object; progress goes to stderr', async () => {
    await writeFile(path.join(dir, 'index.html'), '<h1>v4</h1>');
    const out = await site.run(['deploy', dir, '--json']);
    expect(out.code, out.stderr).toBe(0);
    const result = JSON.parse(out.stdout);
    expect(result).toMatchObject({
      success: true,
      state: 'published',
      live: true,
      url: site.liveUrl,
      files: 7,
      uploaded_files: 1,
      uploaded_bytes: 11,
    });
    expect(result.skipped).toEqual([
      { path: 'data/app.db', reason: 'database' },
      { path: 'outside', reason: 'outside' },
    ]);
    expect(out.stderr).toContain('uploaded 1/1 file');
  });

  it('files the server would refuse stop the deploy before anything is sent (exit 1; 4 for a size limit)', async () => {
    const bad = await siteFolder({ 'index.html': 'x', 'README.md': '# r', 'bin/tool': 'no extension' });
    const big = await siteFolder({ 'index.html': 'x', 'huge.pdf': Buffer.alloc(10 * 1024 * 1024 + 1) });
    try {
      const before = JSON.parse((await site.run(['deploys', '--json'])).stdout).pagination.total_items;
      const out = await site.run(['deploy', bad]);
      expect(out.code).toBe(1);
      expect(out.stderr).toContain('2 files cannot be deployed; nothing was sent');
      expect(out.stderr).toContain('README.md: .md files are not served by Hostplane');
      expect(out.stderr).toContain('bin/tool: a file needs an extension');
      expect(out.stderr).toContain('.hostplaneignore');
      const tooBig = await site.run(['deploy', big]);
      expect(tooBig.code).toBe(4);
      expect(tooBig.stderr).toContain('over the 10 MB limit');
      expect(JSON.parse((await site.run(['deploys', '--json'])).stdout).pagination.total_items).toBe(before);
    } finally {
      await rm(bad, { recursive: true, force: true });
      await rm(big, { recursive: true, force: true });
    }
  });

  it('a refused key exits 3 with the registry message and its hint', async () => {
    const out = await site.run(['deploy', dir], { HOSTPLANE_API_KEY: 'hp_live_not-a-real-key' });
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(/^hostplane deploy: .+/);
    expect(out.stderr).toMatch(/\nhint: .+/);
    expect(out.stderr).not.toMatch(/\bat .+\.js:\d+/);
    const missing = await site.run(['deploys'], { HOSTPLANE_API_KEY: '' });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('HOSTPLANE_API_KEY is not set');
  });

  it('a transient 503 on an upload is retried and the deploy succeeds', async () => {
    const proxy = await flakyProxy(
      instance.port,
      (req) => req.method === 'POST' && /\/files$/.test(req.url ?? ''),
    );
    try {
      await writeFile(path.join(dir, 'index.html'), '<h1>v5</h1>');
      const out = await site.run(['deploy', dir, '--api', proxy.url]);
      expect(out.code, out.stderr).toBe(0);
      expect(proxy.failed()).toBe(1);
      expect(out.stdout).toMatch(
        /retrying POST \/api\/v1\/deploys\/[a-z2-7]{12}\/files in 0\.0 s \(attempt 2: 503 the proxy failed this one on purpose\)/,
      );
      expect(out.stdout).toContain('uploaded 1/1 file');
      expect((await site.page('/')).text).toBe('<h1>v5</h1>');
    } finally {
      await proxy.close();
    }
  });

  it('sends small files in bulk requests and a file over 1 MB by its own PUT', async () => {
    const bulk = await siteOn(instance, 'bulkcli');
    const contents = Object.fromEntries(
      Array.from({ length: 120 }, (_, i) => [`pages/${i}.html`, `<p>page ${i}</p>`]),
    );
    const large = Buffer.alloc(1536 * 1024, 9);
    const folder = await siteFolder({ ...contents, 'big.pdf': large });
    const seen: string[] = [];
    const proxy = await flakyProxy(instance.port, (req) => {
      if (req.method !== 'GET')
        seen.push(`${req.method} ${(req.url ?? '').replace(/[0-9a-f]{64}$/, 'HASH')}`);
      return false;
    });
    try {
      const out = await bulk.run(['deploy', folder, '--json', '--api', proxy.url]);
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toMatchObject({ uploaded_files: 121, files: 121 });
      const id = /\/api\/v1\/deploys\/([a-z2-7]{12})\/finalize/.exec(seen.join(' '))![1]!;
      expect(seen.sort()).toEqual(
        [
          'POST /api/v1/deploys',
          `POST /api/v1/deploys/${id}/files`,
          `PUT /api/v1/deploys/${id}/files/HASH`,
          `POST /api/v1/deploys/${id}/finalize`,
        ].sort(),
      );
      expect((await bulk.page('/pages/119.html')).text).toBe('<p>page 119</p>');
      expect((await bulk.page('/big.pdf')).status).toBe(200);
    } finally {
      await proxy.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('an API that cannot be reached exits 5 after its retries', async () => {
    const closed = await freePort();
    const out = await site.run(['deploys', '--api', `http://127.0.0.1:${closed}`]);
    expect(out.code).toBe(5);
    expect(out.stderr).toContain('ECONNREFUSED');
    expect(out.stderr).toContain('5 attempts');
  });
});

describe('hostplane deploy against PostgreSQL + MinIO', () => {
  let instance: Instance;
  let dir: string;
  beforeAll(async () => {
    const s3 = inject('s3');
    instance = await newInstance({
      DATABASE_URL: await createDatabase(inject('postgresUrl')),
      S3_BUCKET: await createBucket(s3),
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await startServe(instance);
    dir = await siteFolder({ 'index.html': '<h1>pg v1</h1>', 'docs/a.txt': 'a', 'docs/b.txt': 'b' });
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  it('deploys, re-deploys without uploads, and rolls back', async () => {
    const site = await siteOn(instance, 'pgdemo');
    const first = await site.run(['deploy', dir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('3 files to upload');
    expect((await site.page('/docs/b.txt')).text).toBe('b');
    const again = await site.run(['deploy', dir]);
    expect(again.stdout).toContain('0 files to upload');
    await writeFiles(dir, { 'index.html': '<h1>pg v2</h1>' });
    expect((await site.run(['deploy', dir])).stdout).toContain('1 file to upload');
    expect((await site.page('/')).text).toBe('<h1>pg v2</h1>');
    const back = await site.run(['rollback']);
    expect(back.code, back.stderr).toBe(0);
    expect((await site.page('/')).text).toBe('<h1>pg v1</h1>');
  });
});
