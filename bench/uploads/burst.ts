// Admission of uploads under bursts, on a built `hostplane serve` on PostgreSQL + MinIO (the chart's
// shape; the test suite's throwaway servers) with the upload limits as the build sets them: the
// server's RSS under a burst of large uploads, and what a burst of small uploads to one site is
// answered. A benchmark, not a test: it reports
// figures and asserts nothing. See README.md ("Bursts and admission").
//
//   scripts/node.sh exec npx tsx bench/uploads/burst.ts [--bin dist/src/cli/main.js] [--json]
//   options: --count 16 --mb 8 (the large burst: count uploads of mb MB, base64 in JSON, at once)
//
// Each client of the large burst honours 429/503 + Retry-After (the answer's retry_after) and
// sends again until its upload is stored, as the CLI, the console and MCP do: the burst ends when
// every upload is stored. One run per site count (1 and 4 sites), each on a fresh server process.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { createBucket, startMinio, type S3Env } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { s3Env, startServer, type BenchServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    json: { type: 'boolean', default: false },
    count: { type: 'string', default: '16' },
    mb: { type: 'string', default: '8' },
  },
});
const bin = path.resolve(values.bin);
const COUNT = Number(values.count);
const MB = 1000 * 1000;
const SIZE = Number(values.mb) * MB;

const memoryOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
};

const backing: { postgresUrl?: string; minio?: S3Env } = {};

/** A fresh server process on a database and bucket of its own. */
async function serve(): Promise<BenchServer> {
  if (!backing.postgresUrl || !backing.minio) throw new Error('no PostgreSQL / MinIO');
  // No HOSTPLANE_UPLOADS_* here: the build's own defaults are what is measured.
  for (const name of Object.keys(process.env))
    if (name.startsWith('HOSTPLANE_UPLOADS_')) delete process.env[name];
  const env = {
    LOG_LEVEL: 'error',
    HOSTPLANE_BASE_URL: 'http://localhost:8080',
    DATABASE_URL: await createDatabase(backing.postgresUrl),
    ...s3Env(backing.minio, await createBucket(backing.minio)),
  };
  return startServer({ bin, name: 'upload-burst', env, output: 'ignore' });
}

/** Resets the process's peak RSS (VmHWM) to its RSS now (Linux: clear_refs 5). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

/** One upload sent until it is stored, waiting out each 429/503 per its retry_after. */
async function untilStored(port: number, headers: Record<string, string>, body: string) {
  const refused: number[] = [];
  for (;;) {
    const res = await request(port, 'POST', '/api/v1/files/upload', headers, body);
    if (res.status === 200) return { first: refused[0] ?? 200, refused };
    if (res.status !== 429 && res.status !== 503) throw new Error(`upload → ${res.status} ${res.body}`);
    refused.push(res.status);
    const wait = Number((JSON.parse(res.body) as { retry_after?: number }).retry_after ?? 1);
    await sleep(wait * 1000);
  }
}

async function largeBurst(sites: number) {
  const server = await serve();
  try {
    const headers = await Promise.all(
      Array.from({ length: sites }, async (_, i) => ({
        'x-api-key': (await server.createSite(`burst${i}`)).apiKey,
        'content-type': 'application/json',
      })),
    );
    const bodies = Array.from({ length: COUNT }, (_, i) =>
      JSON.stringify({
        path: `large-${i}.png`,
        content: randomBytes(SIZE).toString('base64'),
        encoding: 'base64',
      }),
    );
    const idle = memoryOf(server.pid);
    resetPeak(server.pid);
    let sampledPeak = 0;
    const sampler = setInterval(() => (sampledPeak = Math.max(sampledPeak, memoryOf(server.pid).rssMb)), 20);
    const t0 = performance.now();
    const answers = await Promise.all(
      bodies.map((body, i) => untilStored(server.port, headers[i % sites]!, body)),
    );
    clearInterval(sampler);
    const firstAnswers: Record<number, number> = {};
    for (const a of answers) firstAnswers[a.first] = (firstAnswers[a.first] ?? 0) + 1;
    return {
      sites,
      uploads: `${COUNT} × ${values.mb} MB (${Math.round(bodies[0]!.length / 100_000) / 10} MB of JSON each)`,
      idleRssMb: idle.rssMb,
      peakRssMb: memoryOf(server.pid).peakMb,
      sampledPeakRssMb: sampledPeak,
      secondsUntilAllStored: Math.round((performance.now() - t0) / 100) / 10,
      firstAnswers,
      refusalsInAll: answers.reduce((n, a) => n + a.refused.length, 0),
    };
  } finally {
    await server.stop();
  }
}

async function smallBurst() {
  const server = await serve();
  try {
    const headers = {
      'x-api-key': (await server.createSite('small')).apiKey,
      'content-type': 'application/json',
    };
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request(
          server.port,
          'POST',
          '/api/v1/files/upload',
          headers,
          JSON.stringify({ path: `s${i}.html`, content: `<p>${i}</p>`.repeat(100) }),
        ),
      ),
    );
    const statuses: Record<number, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    return { uploads: '8 × 1 KB to one site at once', statuses };
  } finally {
    await server.stop();
  }
}

const log = (line: string) => values.json || console.log(line);
const postgres = await startPostgres();
const minio = await startMinio();
Object.assign(backing, { postgresUrl: postgres.url, minio });
const result = { bin: path.relative(process.cwd(), bin), small: await smallBurst(), large: [] as unknown[] };
log(`8 small uploads to one site at once: ${JSON.stringify(result.small.statuses)}`);
for (const sites of [1, 4]) {
  const run = await largeBurst(sites);
  result.large.push(run);
  log(`${run.uploads} at once to ${sites} site(s): ${JSON.stringify(run)}`);
}
if (values.json) console.log(JSON.stringify(result));
await Promise.all([postgres.stop(), minio.stop()]);
