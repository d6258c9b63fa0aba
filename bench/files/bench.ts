// The files index at scale: GET /api/v1/files/list (page 1, a middle page, the last page), an
// upload, and a rename of a folder holding 1,000 files, with 1,000 / 10,000 / 100,000 files in
// one site, on PostgreSQL and on PGlite. A benchmark, not a test: it reports medians and asserts
// nothing about time. See README.md.
//
//   npx tsx bench/files/bench.ts [--bin dist/src/cli/main.js] [--sizes 1000,10000,100000]
//                                [--backends postgres,pglite] [--reps 15] [--json]
//
// Seeding 100,000 files through the HTTP API would take long: one file is uploaded through the
// API, then the rest are inserted with SQL as rows like that upload's (same blob, size and type),
// their folders beside them, and the site's counters set to match. Every operation measured goes
// through HTTP to the built server (`make build`), its own process, blobs on local disk.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createDatabase, startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { startServer, type BenchServer } from '../support/server.js';
import { seed, type Query } from './seed.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    backends: { type: 'string', default: 'postgres,pglite' },
    reps: { type: 'string', default: '15' },
    json: { type: 'boolean', default: false },
  },
});
const SIZES = values.sizes.split(',').map(Number);
const BACKENDS = values.backends.split(',') as Array<'postgres' | 'pglite'>;
const REPS = Number(values.reps);
const PER_PAGE = 100;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

interface Figures {
  backend: string;
  files: number;
  page1: number;
  middle: number;
  last: number;
  upload: number;
  renameFolder: number;
}

async function measure(
  server: BenchServer,
  apiKey: string,
  files: number,
  backend: string,
): Promise<Figures> {
  const headers = { 'x-api-key': apiKey };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await request(
      server.port,
      method,
      path,
      body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body === undefined ? undefined : JSON.stringify(body),
    );
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return JSON.parse(res.body) as { pagination?: { total_pages: number; total_items: number } };
  };
  const first = await call('GET', `/api/v1/files/list?per_page=${PER_PAGE}`);
  const pages = first.pagination!.total_pages;
  const page = async (n: number) => {
    await call('GET', `/api/v1/files/list?page=${n}&per_page=${PER_PAGE}`);
  };
  // A fresh server (PGlite's restarted after the seed): warm its code paths and caches first.
  for (let i = 0; i < 40; i++) await page(1 + ((i * 7) % pages));
  const series = async (fn: (i: number) => Promise<void>, reps: number) => {
    for (let i = 0; i < 3; i++) await fn(-1 - i); // warm-up
    const out: number[] = [];
    for (let i = 0; i < reps; i++) out.push(await timed(() => fn(i)));
    return median(out);
  };
  let renames = 0;
  return {
    backend,
    files,
    page1: await series(() => page(1), REPS),
    middle: await series(() => page(Math.ceil(pages / 2)), REPS),
    last: await series(() => page(pages), REPS),
    upload: await series(async (i) => {
      await call('POST', '/api/v1/files/upload', { path: `up/u${i + 10}.html`, content: `<p>${i}</p>` });
    }, REPS),
    renameFolder: await series(
      async () => {
        const [from, to] = renames++ % 2 === 0 ? ['move', 'moved'] : ['moved', 'move'];
        await call('POST', '/api/v1/files/rename-folder', { old_path: from, new_path: to });
      },
      Math.max(5, Math.floor(REPS / 2)),
    ),
  };
}

async function runOne(backend: 'postgres' | 'pglite', files: number, pgServer: PostgresServer | undefined) {
  const databaseUrl = backend === 'postgres' ? await createDatabase(pgServer!.url) : undefined;
  const env = { LOG_LEVEL: 'error', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  // The bench's own data dir: PGlite's must outlive a stop of the server (see below).
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `hostplane-bench-files-${backend}-`));
  const start = () =>
    startServer({ bin: values.bin, name: `files-${backend}`, env, runInDataDir: true, dataDir });
  let server = await start();
  try {
    const { apiKey } = await server.createSite('bench-files');
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const up = await request(
      server.port,
      'POST',
      '/api/v1/files/upload',
      headers,
      JSON.stringify({ path: 'seed.html', content: '<!doctype html><p>a page like many</p>' }),
    );
    if (up.status !== 200) throw new Error(`seed upload: ${up.status} ${up.body}`);
    if (databaseUrl) {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      const query: Query = async (text, params) => (await client.query(text, params)).rows;
      const [site] = await query(`select id from sites where slug = 'bench-files'`);
      await seed(query, Number(site!.id), files);
      // What autovacuum does after a bulk insert (statistics, visibility map), done now.
      await query('vacuum analyze site_files');
      await client.end();
    } else {
      // PGlite's folder is the server's alone: seed it between two runs of the server.
      await server.stop();
      const { PGlite } = await import('@electric-sql/pglite');
      const db = new PGlite(`${dataDir}/pglite`);
      const query: Query = async (text, params) =>
        (await db.query<Record<string, unknown>>(text, params)).rows;
      const [site] = await query(`select id from sites where slug = 'bench-files'`);
      // No VACUUM nor ANALYZE: PGlite runs no autovacuum, so a real standalone site has neither.
      await seed(query, Number(site!.id), files);
      await db.close();
      server = await start();
    }
    return await measure(server, apiKey, files, backend);
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const pgServer = BACKENDS.includes('postgres') ? await startPostgres() : undefined;
const results: Figures[] = [];
try {
  for (const backend of BACKENDS) {
    for (const files of SIZES) {
      const figures = await runOne(backend, files, pgServer);
      results.push(figures);
      if (!values.json) {
        const f = (x: number) => `${x.toFixed(1)} ms`;
        console.log(
          `${backend.padEnd(8)} ${String(files).padStart(7)} files: list p1 ${f(figures.page1)}, middle ${f(figures.middle)}, last ${f(figures.last)}; upload ${f(figures.upload)}; rename-folder (1,000 files) ${f(figures.renameFolder)}`,
        );
      }
    }
  }
} finally {
  await pgServer?.stop();
}
if (values.json) console.log(JSON.stringify(results));
