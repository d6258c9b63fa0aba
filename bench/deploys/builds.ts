// Two builds' `hostplane deploy` side by side, alternating rounds (A B, then B A): a reference
// build's dist (A: its CLI against its own server) and this checkout's (B), on the same machine in
// one sitting, so that a change to the deploy path is told apart from the machine's drift. Each
// round deploys the same folder of `--files` pages of ~1 KB to a fresh site (or, `--redeploy`, one
// changed file to a site deployed once), whole CLI process included, and reports per build the
// median wall time, the CLI's own phases (its --json timings_ms), the server's CPU per deploy
// (/proc) and the CLI process's CPU (/usr/bin/time).
//
//   scripts/node.sh exec npx tsx bench/deploys/builds.ts --a ../ref/dist/src/cli/main.js \
//     [--b dist/src/cli/main.js] [--backend standalone|s3] [--rounds 8] [--files 300] [--redeploy]
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createBucket, startMinio } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { cpuSeconds } from '../sqlite/servers.js';
import { s3Env, startServer, type BenchServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: 'dist/src/cli/main.js' },
    backend: { type: 'string', default: 'standalone' },
    rounds: { type: 'string', default: '8' },
    files: { type: 'string', default: '300' },
    redeploy: { type: 'boolean', default: false },
  },
});
if (!values.a) throw new Error('--a: the reference build (its dist/src/cli/main.js)');
if (!['standalone', 's3'].includes(values.backend)) throw new Error('--backend is standalone or s3');
const exec = promisify(execFile);
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
type Side = 'a' | 'b';
const bins: Record<Side, string> = { a: path.resolve(values.a), b: path.resolve(values.b) };

const postgres = values.backend === 's3' ? await startPostgres() : undefined;
const minio = values.backend === 's3' ? await startMinio() : undefined;
const servers = {} as Record<Side, BenchServer>;
const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-builds-'));
try {
  for (let i = 0; i < Number(values.files); i++) {
    const rel = i === 0 ? 'index.html' : `pages/${Math.floor(i / 50)}/page-${i}.html`;
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(
      path.join(dir, rel),
      `<!doctype html><title>${i}</title>${'<p>lorem ipsum</p>'.repeat(50)}`,
    );
  }
  for (const side of ['a', 'b'] as const)
    servers[side] = await startServer({
      bin: bins[side],
      name: `builds-${side}`,
      env: {
        ...(postgres && minio
          ? { DATABASE_URL: await createDatabase(postgres.url), ...s3Env(minio, await createBucket(minio)) }
          : {}),
        LOG_LEVEL: 'error',
      },
      localhostUrls: true,
    });
  let sites = 0;
  const keys: Partial<Record<Side, string>> = {};
  const deploy = async (side: Side, apiKey: string) => {
    const env = {
      ...process.env,
      HOSTPLANE_API_KEY: apiKey,
      HOSTPLANE_API_URL: `http://localhost:${servers[side].port}`,
    };
    const cpu0 = cpuSeconds(servers[side].pid);
    const start = performance.now();
    const { stdout, stderr } = await exec(
      '/usr/bin/time',
      ['-f', 'CPU %U %S', process.execPath, bins[side], 'deploy', dir, '--json'],
      { env, maxBuffer: 1 << 24 },
    );
    const wall = performance.now() - start;
    const cli = /CPU ([\d.]+) ([\d.]+)/.exec(stderr)!;
    return {
      wall,
      server_cpu: (cpuSeconds(servers[side].pid) - cpu0) * 1000,
      cli_cpu: (Number(cli[1]) + Number(cli[2])) * 1000,
      ...(JSON.parse(stdout) as { timings_ms: Record<string, number> }).timings_ms,
    };
  };
  const got: Record<Side, Record<string, number[]>> = { a: {}, b: {} };
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const side of (round % 2 ? ['a', 'b'] : ['b', 'a']) as Side[]) {
      let key = keys[side];
      if (!key) {
        key = (await servers[side].createSite(`builds-${++sites}`, `builds${sites}@example.com`)).apiKey;
        if (values.redeploy) {
          keys[side] = key;
          await deploy(side, key);
        }
      }
      if (values.redeploy) await writeFile(path.join(dir, 'index.html'), `<p>round ${round} ${side}</p>`);
      for (const [k, v] of Object.entries(await deploy(side, key))) (got[side][k] ??= []).push(Math.round(v));
    }
    console.error(
      `  round ${round}: a ${got.a.wall!.at(-1)} ms, b ${got.b.wall!.at(-1)} ms, load ${os.loadavg()[0]!.toFixed(1)}`,
    );
  }
  console.log(
    `${values.redeploy ? 'one-file redeploy' : `first deploy of ${values.files} files`}, ${values.backend}, medians of ${values.rounds} rounds (ms):`,
  );
  for (const side of ['a', 'b'] as const)
    console.log(
      `  ${side} ${bins[side]}: ${Object.entries(got[side])
        .map(([k, v]) => `${k} ${median(v)}`)
        .join(', ')}`,
    );
} finally {
  for (const side of ['a', 'b'] as const) await servers[side]?.stop();
  await minio?.stop();
  await postgres?.stop();
  await rm(dir, { recursive: true, force: true });
}
