// The runtime's own ceiling for bench/edge: a bare `node:http` server answering the bench's files
// from memory, with the headers that matter copied from the edge's answer (Content-Type, ETag,
// Content-Length), one writeHead with a flat header list and one end, as the edge does. No routing,
// no caches, no metrics, no request id: what any Node edge pays before doing anything of its own.
//
//   node bench/edge/bare-node.mjs <files.json>
//
// files.json: {"host": "127.0.0.1", "port": 1234, "files": [{"url", "contentType", "etag", "file"}]}
// where `file` is a path holding the bytes. Started by bench.mjs with the same Node as Hostplane
// (bench/edge/run.sh runs it through scripts/node.sh, the pinned Node 24), pinned like the others.
/* global process, console, Buffer -- Node globals; the ESLint config has none for .mjs */
import fs from 'node:fs';
import http from 'node:http';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const answers = new Map();
for (const f of config.files) {
  const body = fs.readFileSync(f.file);
  const headers = ['Content-Type', f.contentType, 'ETag', f.etag, 'Content-Length', String(body.length)];
  answers.set(f.url, { headers, body });
}
const NOT_FOUND = Buffer.from('Not Found');

const server = http.createServer((req, res) => {
  const answer = answers.get(req.url);
  if (!answer) {
    res.writeHead(404, ['Content-Type', 'text/plain', 'Content-Length', String(NOT_FOUND.length)]);
    res.end(NOT_FOUND);
    return;
  }
  res.writeHead(200, answer.headers);
  res.end(req.method === 'HEAD' ? undefined : answer.body);
});
// Like the edge: keep-alive connections are never closed after a number of requests.
server.keepAliveTimeout = 65_000;
server.listen(config.port, config.host, () => console.log(`bare node:http ${process.version} ready`));
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(0));
