// The runtime's own ceiling for bench/sqlite: a bare `node:http` server that takes the bench's
// SQL calls (POST /api/v1/sqlite/query and /exec, load.lua's requests) and answers each with the
// body and headers Hostplane answers them with (the read's row made from its id), without
// checking anything and without SQL. With `--worker`, each call also makes the round trip to a
// worker thread that answers it, as Hostplane's SQLite worker does (calls queued until the event
// loop's check phase and posted together, answers posted one by one, flat arrays): what SQL off
// the event loop costs before a single statement runs.
//
//   node bench/sqlite/bare-node.mjs <port> [--worker]
//
// Started by bench.ts with the same Node as Hostplane (the pinned Node 24 of scripts/node.sh).
/* global process, console, Buffer, setImmediate -- Node globals; the ESLint config has none for .mjs */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';

const port = Number(process.argv[2]);
const withWorker = process.argv.includes('--worker');
let version = 10_000;

/** A read answers the row its id names (seeded rows: r + 14 digits, title "title <n>", n). */
function answerOf(body) {
  const call = JSON.parse(body);
  const params = Array.isArray(call.params) ? call.params : [];
  if (call.sql.startsWith('SELECT')) {
    const id = String(params[0]);
    const n = Number(id.slice(1));
    const rows = JSON.stringify([{ id, title: `title ${n}`, n }]);
    return `{"success":true,"rows":${rows},"rowCount":1,"version":${version},"truncated":false}`;
  }
  version += 1;
  return `{"success":true,"rowsAffected":1,"lastInsertRowId":${version},"version":${version}}`;
}

/** Answers the call with Hostplane's headers (CORS for the bench's Origin, a request id). */
function send(req, res, text) {
  res.setHeader('X-Request-Id', randomUUID());
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The worker round trip: calls out in one message per turn, answers back one by one. */
function workerHop() {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.on('message', (calls) => {
       for (let i = 0; i < calls.length; i += 2) parentPort.postMessage([calls[i], 1, calls[i + 1]]);
     });`,
    { eval: true },
  );
  const pending = new Map();
  let next = 1;
  let outbox = [];
  worker.on('message', ([id, , text]) => {
    const answer = pending.get(id);
    pending.delete(id);
    answer(text);
  });
  const flush = () => {
    const calls = outbox;
    outbox = [];
    worker.postMessage(calls);
  };
  return (text) =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      outbox.push(id, text);
      if (outbox.length === 2) setImmediate(flush);
    });
}

const hop = withWorker ? workerHop() : undefined;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const text = answerOf(Buffer.concat(chunks).toString('utf8'));
    if (hop) void hop(text).then((answer) => send(req, res, answer));
    else send(req, res, text);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1', () =>
  console.log(`bare node:http ${process.version}${withWorker ? ' + worker' : ''} ready`),
);
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(0));
