import net from 'node:net';

export interface SlowAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the answer (or the connection's end). */
  elapsedMs: number;
}

/**
 * An HTTP/1.1 request sent the way a slow or hostile client sends it, over a raw socket: the head
 * and the first part of the body at once, then one byte (or `chunkBytes`) every `everyMs` (none when
 * `everyMs` is undefined: the body stalls). `answer` resolves with the server's answer once it is
 * whole, or with what came when the connection closed (status 0: closed without a word); `close()`
 * hangs up.
 */
export function slowRequest(
  port: number,
  opts: {
    method?: string;
    path: string;
    headers: Record<string, string>;
    /** The whole body the client claims (Content-Length is its length). */
    body: Buffer | string;
    /** Bytes of `body` sent at once with the head. */
    sendFirst: number;
    everyMs?: number;
    /** Bytes sent every `everyMs` (default 1). */
    chunkBytes?: number;
    /** Sent with `Transfer-Encoding: chunked` (each write one chunk) instead of a Content-Length. */
    chunked?: boolean;
  },
): { answer: Promise<SlowAnswer>; close(): void } {
  const body = Buffer.from(opts.body);
  const socket = net.connect(port, '127.0.0.1');
  const started = performance.now();
  const received: Buffer[] = [];
  let sent = Math.min(opts.sendFirst, body.length);
  let timer: NodeJS.Timeout | undefined;
  const head =
    `${opts.method ?? 'POST'} ${opts.path} HTTP/1.1\r\n` +
    Object.entries({
      host: 'localhost:8080',
      ...opts.headers,
      ...(opts.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n';
  const framed = (part: Buffer) =>
    !opts.chunked || part.length === 0
      ? part
      : Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]);
  socket.write(Buffer.concat([Buffer.from(head), framed(body.subarray(0, sent))]));
  if (opts.everyMs !== undefined) {
    timer = setInterval(() => {
      if (sent >= body.length || socket.destroyed) return clearInterval(timer);
      const next = Math.min(body.length, sent + (opts.chunkBytes ?? 1));
      socket.write(framed(body.subarray(sent, next)), () => undefined);
      if (opts.chunked && next >= body.length) socket.write('0\r\n\r\n');
      sent = next;
    }, opts.everyMs);
  }
  const answer = new Promise<SlowAnswer>((resolve) => {
    const done = () => {
      clearInterval(timer);
      resolve(parseAnswer(Buffer.concat(received).toString('utf8'), performance.now() - started));
      socket.destroy();
    };
    // A whole answer ends the request (a refusal may keep the connection open to drain the body).
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      const parsed = parseAnswer(Buffer.concat(received).toString('utf8'), 0);
      const length = Number(parsed.headers['content-length'] ?? NaN);
      if (parsed.status > 0 && Buffer.byteLength(parsed.body) >= length) done();
    });
    // The server may reset the connection after its answer (the body it never read): keep what came.
    socket.on('error', () => undefined);
    socket.on('close', done);
  });
  return {
    answer,
    close: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

function parseAnswer(text: string, elapsedMs: number): SlowAnswer {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: '', elapsedMs };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine?.split(' ')[1]), headers, body: text.slice(end + 4), elapsedMs };
}
