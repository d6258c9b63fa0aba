// Accepted form submissions per second through POST /f/<uuid> on PostgreSQL: the whole path a
// visitor's submission takes (per-IP rate limit in PostgreSQL, validation, spam scoring with its
// lookups, the quota upsert, the insert and the outbox row in one transaction). A benchmark, not
// a test: it reports figures and asserts nothing about time.
//
//   make build && scripts/node.sh exec npx tsx bench/forms/bench.ts [--seconds 15] [--concurrency 16]
//
// The server is the built binary, spawned as its own process; PostgreSQL is the test suite's
// throwaway server (test/support/postgres.ts) on loopback. Each request comes from its own
// client address (X-Forwarded-For, trusted from loopback) with distinct content, so neither the
// per-IP limit nor the repeat signal interferes: every submission is a legitimate one.
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { startServer, type BenchServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    seconds: { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '16' },
  },
});
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function main() {
  const postgres = await startPostgres();
  let server: BenchServer | undefined;
  try {
    server = await startServer({
      bin: values.bin,
      name: 'forms',
      env: {
        HOSTPLANE_TRUST_PROXY: 'loopback',
        DATABASE_URL: await createDatabase(postgres.url),
        LOG_LEVEL: 'warn',
      },
    });
    const port = server.port;
    const site = await server.createSite('bench');
    const created = await request(
      port,
      'POST',
      '/api/v1/forms',
      { 'x-api-key': site.apiKey, 'content-type': 'application/json' },
      JSON.stringify({
        name: 'Bench',
        fields: [
          { name: 'name', label: 'Name', type: 'text', required: true },
          { name: 'email', label: 'Email', type: 'email', required: true },
          { name: 'message', label: 'Message', type: 'textarea' },
        ],
      }),
      agent,
    );
    if (created.status !== 201) throw new Error(`create form → ${created.status} ${created.body}`);
    const uuid = (JSON.parse(created.body) as { form: { uuid: string } }).form.uuid;

    let n = 0;
    const statuses = new Map<number, number>();
    const latencies: number[] = [];
    const seconds = Number(values.seconds);
    const started = performance.now();
    const until = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: Number(values.concurrency) }, async () => {
        while (performance.now() < until) {
          const i = ++n;
          const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
          const body = JSON.stringify({
            name: `Visitor ${i}`,
            email: `visitor${i}@example.com`,
            message: `Hello, this is message number ${i}.`,
            _t_trap: '',
            _t_start: Math.floor(Date.now() / 1000) - 30,
          });
          const t0 = performance.now();
          const res = await request(
            port,
            'POST',
            `/f/${uuid}`,
            { 'content-type': 'application/json', 'x-forwarded-for': ip },
            body,
            agent,
          );
          latencies.push(performance.now() - t0);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const accepted = statuses.get(201) ?? 0;
    console.log(
      JSON.stringify(
        {
          seconds: Number(elapsed.toFixed(1)),
          concurrency: Number(values.concurrency),
          statuses: Object.fromEntries(statuses),
          acceptedPerSecond: Number((accepted / elapsed).toFixed(1)),
          latencyMs: {
            p50: Number(percentile(latencies, 0.5).toFixed(1)),
            p99: Number(percentile(latencies, 0.99).toFixed(1)),
          },
          node: process.version,
          cpus: os.cpus().length,
        },
        null,
        2,
      ),
    );
  } finally {
    await server?.stop();
    await postgres.stop();
  }
}

await main();
