// Deploy benchmark: a 300-file site through /api/v1/deploys (first deploy, then an unchanged
// re-deploy) against 300 single uploads through /api/v1/files/upload, on PostgreSQL + MinIO (the
// test suite's own throwaway servers, on loopback) with the built `hostplane serve` as its own
// process. Reports figures; asserts nothing. Each case runs on a fresh site (no shared blobs).
// The cli_* cases run `hostplane deploy DIR` (the built CLI, its own process: Node start-up, the
// folder walk and hashing included) on the same 300 files written to a temp folder; `--mode api`
// or `--mode cli` runs one kind only. `--mode bulk` (in `all` too) is issue 29's comparison, on
// the same server in alternating rounds: N single uploads one at a time (`POST /api/v1/files/upload`)
// against `hostplane deploy` (whole process; small files go in bulk requests) of the same N files,
// for each N of `--sizes` (300,3000), each reported as the ratio of their medians. `--mode redeploy`
// (in `all` too): a 300-file site deployed once, then one file changed and `hostplane deploy` run
// again, whole process, `--rounds` times (issue 29: ≤ 0.5 s). `--cpu-prof-dir DIR` profiles the
// server (DIR/server, written when it stops) and every CLI run (DIR/cli) with Node's --cpu-prof.
//
//   make build
//   scripts/node.sh exec npx tsx bench/deploys/bench.ts            # --files 300 --concurrency 8 --mode all --json
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createBucket, startMinio } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { s3Env, startServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    files: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '8' },
    mode: { type: 'string', default: 'all' },
    sizes: { type: 'string', default: '300,3000' },
    // standalone: PGlite + a local folder (`hostplane serve` with no DATABASE_URL/S3), as on a laptop.
    backend: { type: 'string', default: 's3' },
    rounds: { type: 'string', default: '3' },
    'cpu-prof-dir': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const FILES = Number(values.files);
const CONCURRENCY = Number(values.concurrency);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const execFileAsync = promisify(execFile);
const MODE = values.mode;
if (!['all', 'api', 'cli', 'bulk', 'redeploy'].includes(MODE))
  throw new Error('--mode is all, api, cli, bulk or redeploy');
const PROF = values['cpu-prof-dir'] === undefined ? undefined : path.resolve(values['cpu-prof-dir']);
const profArgs = (who: string) => (PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(PROF, who)}`] : []);
const SIZES = values.sizes.split(',').map(Number);
const ROUNDS = Number(values.rounds);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A small site: `n` pages of about 1 KB, distinct per site. */
function site(tag: string, n = FILES): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (let i = 0; i < n; i++) {
    const path = i === 0 ? 'index.html' : `pages/${Math.floor(i / 50)}/page-${i}.html`;
    files.set(
      path,
      Buffer.from(`<!doctype html><title>${tag} ${i}</title>${'<p>lorem ipsum</p>'.repeat(50)}`),
    );
  }
  return files;
}

/** Runs `work` over `items` with at most `limit` at once. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

async function main(): Promise<void> {
  const standalone = values.backend === 'standalone';
  if (!standalone && values.backend !== 's3') throw new Error('--backend is s3 or standalone');
  const postgres = standalone ? undefined : await startPostgres();
  const minio = standalone ? undefined : await startMinio();
  const server = await startServer({
    bin: values.bin,
    name: 'deploys',
    env: {
      ...(postgres && minio
        ? { DATABASE_URL: await createDatabase(postgres.url), ...s3Env(minio, await createBucket(minio)) }
        : {}),
      LOG_LEVEL: 'error',
      HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '4096',
      HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '4096',
    },
    localhostUrls: true,
    nodeArgs: profArgs('server'),
  });
  let slugs = 0;
  const call = async (
    key: string,
    method: string,
    path: string,
    body?: string | Buffer,
    type = 'application/json',
  ) => {
    const res = await request(
      server.port,
      method,
      path,
      { host: 'localhost', 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': type }) },
      body,
      agent,
    );
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${res.body}`);
    return JSON.parse(res.body) as Record<string, unknown>;
  };
  const fresh = async () => (await server.createSite(`bench-${++slugs}`, `bench${slugs}@example.com`)).apiKey;
  const timed = async (what: () => Promise<unknown>) => {
    const start = performance.now();
    await what();
    return Math.round(performance.now() - start);
  };

  const uploads = async (concurrency: number, n = FILES, tag = `uploads-${concurrency}`) => {
    const key = await fresh();
    const files = site(tag, n);
    return timed(() =>
      pool([...files], concurrency, async ([path, bytes]) => {
        await call(
          key,
          'POST',
          '/api/v1/files/upload',
          JSON.stringify({ path, content: bytes.toString('utf8') }),
        );
      }),
    );
  };
  const deploy = async (key: string, files: Map<string, Buffer>, concurrency: number) => {
    const manifest = Object.fromEntries([...files].map(([p, b]) => [p, sha256(b)]));
    const byHash = new Map([...files.values()].map((b) => [sha256(b), b]));
    const phases: number[] = [performance.now()];
    const created = await call(key, 'POST', '/api/v1/deploys', JSON.stringify({ files: manifest }));
    const required = created.required as string[];
    phases.push(performance.now());
    await pool(required, concurrency, async (hash) => {
      await call(
        key,
        'PUT',
        `/api/v1/deploys/${created.id as string}/files/${hash}`,
        byHash.get(hash),
        'application/octet-stream',
      );
    });
    phases.push(performance.now());
    await call(key, 'POST', `/api/v1/deploys/${created.id as string}/finalize`);
    phases.push(performance.now());
    lastPhases = phases.slice(1).map((t, i) => Math.round(t - phases[i]!));
    return required.length;
  };
  /** create, uploads, finalize (ms) of the last deploy. */
  let lastPhases: number[] = [];

  /** `hostplane deploy DIR --json` on `key`: wall time (process included), the CLI's own, uploads. */
  const cliDeploy = async (key: string, dir: string, concurrency: number) => {
    const start = performance.now();
    const { stdout } = await execFileAsync(
      process.execPath,
      [...profArgs('cli'), values.bin, 'deploy', dir, '--json', '--concurrency', String(concurrency)],
      {
        env: { ...process.env, HOSTPLANE_API_KEY: key, HOSTPLANE_API_URL: `http://localhost:${server.port}` },
        maxBuffer: 1 << 24,
      },
    );
    const wall = Math.round(performance.now() - start);
    const result = JSON.parse(stdout) as {
      duration_ms: number;
      uploaded_files: number;
      concurrency: number;
      timings_ms: Record<string, number>;
    };
    if (!values.json) console.error(`  cli c${concurrency}: ${JSON.stringify(result.timings_ms)}`);
    return { wall, own: result.duration_ms, uploaded: result.uploaded_files, window: result.concurrency };
  };

  const folder = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-deploy-'));
  const bulkDirs: string[] = [];
  try {
    const results: Record<string, number | undefined> = {};
    for (const concurrency of [1, CONCURRENCY]) {
      if (MODE !== 'all' && MODE !== 'api') break;
      results[`uploads_c${concurrency}_ms`] = await uploads(concurrency);
      const key = await fresh();
      const files = site(`deploy-${concurrency}`);
      let uploaded = 0;
      results[`deploy_first_c${concurrency}_ms`] = await timed(async () => {
        uploaded = await deploy(key, files, concurrency);
      });
      results[`deploy_first_c${concurrency}_blobs`] = uploaded;
      [
        results[`deploy_first_c${concurrency}_create_ms`],
        results[`deploy_first_c${concurrency}_puts_ms`],
        results[`deploy_first_c${concurrency}_finalize_ms`],
      ] = lastPhases;
      results[`deploy_unchanged_c${concurrency}_ms`] = await timed(async () => {
        uploaded = await deploy(key, files, concurrency);
      });
      results[`deploy_unchanged_c${concurrency}_blobs`] = uploaded;
      [
        results[`deploy_unchanged_c${concurrency}_create_ms`],
        ,
        results[`deploy_unchanged_c${concurrency}_finalize_ms`],
      ] = lastPhases;
    }
    if (MODE === 'all' || MODE === 'bulk') {
      for (const n of SIZES) {
        const dir = await mkdtemp(path.join(os.tmpdir(), `hostplane-bench-bulk-${n}-`));
        bulkDirs.push(dir);
        for (const [rel, bytes] of site(`bulk-${n}`, n)) {
          await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
          await writeFile(path.join(dir, rel), bytes);
        }
        const singles: number[] = [];
        const clis: number[] = [];
        // Alternating rounds on the one server: the machine's noise falls on both sides alike.
        for (let round = 1; round <= ROUNDS; round++) {
          singles.push(await uploads(1, n, `singles-${n}-${round}`));
          const done = await cliDeploy(await fresh(), dir, CONCURRENCY);
          if (done.uploaded !== n) throw new Error(`the CLI uploaded ${done.uploaded} of ${n} files`);
          clis.push(done.wall);
          if (!values.json)
            console.error(`  n=${n} round ${round}: singles ${singles.at(-1)} ms, cli ${done.wall} ms`);
        }
        results[`bulk_n${n}_singles_c1_ms`] = median(singles);
        results[`bulk_n${n}_cli_ms`] = median(clis);
        results[`bulk_n${n}_ratio`] = Math.round((median(singles) / median(clis)) * 10) / 10;
      }
    }
    if (MODE === 'all' || MODE === 'redeploy') {
      // A 300-file site, then one file changed before each `hostplane deploy` (whole process).
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-redeploy-'));
      bulkDirs.push(dir);
      for (const [rel, bytes] of site('redeploy')) {
        await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
        await writeFile(path.join(dir, rel), bytes);
      }
      const key = await fresh();
      const first = await cliDeploy(key, dir, CONCURRENCY);
      if (first.uploaded !== FILES) throw new Error(`the CLI uploaded ${first.uploaded} of ${FILES} files`);
      const walls: number[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        await writeFile(path.join(dir, 'index.html'), `<!doctype html><title>changed ${round}</title>`);
        const done = await cliDeploy(key, dir, CONCURRENCY);
        if (done.uploaded !== 1) throw new Error(`the CLI uploaded ${done.uploaded} files, not 1`);
        walls.push(done.wall);
        if (!values.json) console.error(`  redeploy round ${round}: ${done.wall} ms (own ${done.own} ms)`);
      }
      results.redeploy_one_file_cli_ms = median(walls);
    }
    if (MODE === 'all' || MODE === 'cli') {
      // The same files on disk, once: each case deploys this folder to a fresh site.
      for (const [rel, bytes] of site('cli')) {
        await mkdir(path.dirname(path.join(folder, rel)), { recursive: true });
        await writeFile(path.join(folder, rel), bytes);
      }
      for (const concurrency of [1, CONCURRENCY]) {
        const key = await fresh();
        const first = await cliDeploy(key, folder, concurrency);
        results[`cli_first_c${concurrency}_ms`] = first.wall;
        results[`cli_first_c${concurrency}_own_ms`] = first.own;
        results[`cli_first_c${concurrency}_blobs`] = first.uploaded;
        results[`cli_first_c${concurrency}_window`] = first.window;
        const unchanged = await cliDeploy(key, folder, concurrency);
        results[`cli_unchanged_c${concurrency}_ms`] = unchanged.wall;
        results[`cli_unchanged_c${concurrency}_own_ms`] = unchanged.own;
        results[`cli_unchanged_c${concurrency}_blobs`] = unchanged.uploaded;
      }
    }
    if (values.json) console.log(JSON.stringify({ files: FILES, backend: values.backend, ...results }));
    else {
      console.log(
        `${FILES} files of ~1 KB, ${standalone ? 'standalone (PGlite + local folder)' : 'PostgreSQL + MinIO'}, server ${values.bin}`,
      );
      for (const [k, v] of Object.entries(results)) console.log(`  ${k.padEnd(34)} ${v}`);
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
    for (const dir of bulkDirs) await rm(dir, { recursive: true, force: true });
    agent.destroy();
    await server.stop();
    await minio?.stop();
    await postgres?.stop();
  }
}

await main();
