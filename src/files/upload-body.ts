import { isUtf8 } from 'node:buffer';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../errors/index.js';
import { jsonBody, jsonNestsDeeper, jsonTooDeepMessage } from '../http/index.js';
import { decodeContent, tooLarge } from './upload-rules.js';

/*
 * The upload's JSON body without a copy of its `content` as a JavaScript string.
 *
 * express.json holds a large upload several times over: the chunks, their concatenation, the body as
 * a string, the parsed `content` string, then the decoded bytes (about 60 MB for a 10 MB file). For
 * a large body this reader fills one buffer of its Content-Length, finds the `content` string's
 * bytes in it and parses only the rest as JSON (`content` replaced by ""); the handler then decodes
 * the bytes straight from the buffer. Anything unusual (escapes or control characters in `content`,
 * another charset or a compressed body, no Content-Length, a shape the scan does not expect) goes the
 * ordinary way, so every answer stays what express.json gives.
 */

/** Bodies at least this large take the direct path. */
const DIRECT_MIN_BYTES = 1024 * 1024;
/** base64 of 10 MB plus JSON framing, as the ordinary parser's limit. */
const LIMIT_BYTES = 15 * 1024 * 1024;
const PLAIN_JSON = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

interface ContentSpan {
  body: Buffer;
  start: number;
  end: number;
}

const spans = new WeakMap<Request, ContentSpan>();

/** A body-parser style failure (mapped by the HTTP error handler, as express.json's are). */
const refusal = (status: number, type: string, message: string) =>
  Object.assign(new Error(message), { status, type, expose: true });

/**
 * The body's length when the direct reader takes it (a plain JSON body of a declared length from
 * DIRECT_MIN_BYTES to the limit, not encoded); undefined when express.json does.
 */
export function directLength(req: Request): number | undefined {
  const length = Number(req.headers['content-length']);
  const encoding = req.headers['content-encoding'];
  const direct =
    Number.isInteger(length) &&
    length >= DIRECT_MIN_BYTES &&
    length <= LIMIT_BYTES &&
    (encoding === undefined || encoding === 'identity') &&
    PLAIN_JSON.test(req.headers['content-type'] ?? 'application/json');
  return direct ? length : undefined;
}

export function uploadJsonBody(): RequestHandler {
  const ordinary = jsonBody('15mb', tooLarge);
  return (req, res, next) => {
    const length = directLength(req);
    if (length === undefined) return ordinary(req, res, next);
    readExactly(req, length).then((body) => {
      try {
        req.body = parseDirect(req, body);
        next();
      } catch (err) {
        next(err);
      }
    }, next);
  };
}

/** The upload's bytes: decoded from the body's buffer when the direct path took it, else from `content`. */
export function uploadBytes(req: Request, content: string, encoding: string | undefined): Buffer {
  const span = spans.get(req);
  if (!span) return decodeContent(content, encoding);
  spans.delete(req);
  const bytes = span.body.subarray(span.start, span.end);
  if (encoding !== 'base64') return bytes; // valid UTF-8 with no escapes: the bytes are the text
  return decodeBase64(bytes) ?? decodeContent(bytes.toString('utf8'), encoding);
}

function readExactly(req: Request, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const body = Buffer.allocUnsafe(length);
    let filled = 0;
    req.on('data', (chunk: Buffer) => {
      if (filled + chunk.length <= length) chunk.copy(body, filled);
      filled += chunk.length;
    });
    req.on('end', () =>
      filled === length
        ? resolve(body)
        : reject(refusal(400, 'request.size.invalid', 'request size did not match content length')),
    );
    req.on('aborted', () => reject(refusal(400, 'request.aborted', 'request aborted')));
    req.on('error', reject);
  });
}

function parseDirect(req: Request, raw: Buffer): unknown {
  if (!isUtf8(raw)) throw refusal(400, 'encoding.invalid', 'The request body is not valid UTF-8.');
  // iconv (behind express.json) drops a byte order mark: so does this.
  const body = raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
  if (jsonNestsDeeper(body)) throw refusal(400, 'entity.too.deep', jsonTooDeepMessage);
  const span = findContent(body);
  if (span && !hasEscapeOrControl(body, span.start, span.end)) {
    const rest = Buffer.concat([body.subarray(0, span.start), body.subarray(span.end)]);
    const parsed = parseJson(rest.toString('utf8')) as { content?: unknown };
    if (parsed.content === '') {
      spans.set(req, { body, ...span });
      return parsed;
    }
  }
  return parseJson(body.toString('utf8'));
}

/** JSON.parse as express.json does it (strict: an object or array), failing the same way. */
function parseJson(text: string): unknown {
  const first = /^[ \t\n\r]*(.)/.exec(text)?.[1];
  const invalid = () => refusal(400, 'entity.parse.failed', 'The request body is not valid JSON.');
  if (first !== '{' && first !== '[') throw invalid();
  try {
    return JSON.parse(text);
  } catch {
    throw invalid();
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isWs = (b: number | undefined) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
const skipWs = (buf: Buffer, i: number) => {
  while (isWs(buf[i])) i++;
  return i;
};

/** Index of the quote closing the string that opens at `i`, or -1. */
function stringEnd(buf: Buffer, i: number): number {
  let at = i;
  for (;;) {
    at = buf.indexOf(QUOTE, at + 1);
    if (at < 0) return -1;
    let slashes = 0;
    while (buf[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

/** Index just after the JSON value that starts at `i`, or -1 (a scan, not a validation). */
function valueEnd(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) {
    const end = stringEnd(buf, i);
    return end < 0 ? -1 : end + 1;
  }
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < buf.length; j++) {
      const b = buf[j];
      if (b === QUOTE) {
        j = stringEnd(buf, j);
        if (j < 0) return -1;
      } else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < buf.length && !isWs(buf[j]) && buf[j] !== 0x2c && buf[j] !== 0x7d && buf[j] !== 0x5d) j++;
  return j > i ? j : -1;
}

const CONTENT_KEY = Buffer.from('"content"');

/** Where the bytes of the top-level `content` string are (inside its quotes), if found once. */
function findContent(buf: Buffer): { start: number; end: number } | undefined {
  let i = skipWs(buf, 0);
  if (buf[i] !== 0x7b) return undefined;
  i = skipWs(buf, i + 1);
  let found: { start: number; end: number } | undefined;
  while (buf[i] === QUOTE) {
    const keyEnd = stringEnd(buf, i);
    // An escaped key may spell "content" too (JSON.parse keeps the last): leave those to it.
    if (keyEnd < 0 || buf.subarray(i, keyEnd).includes(BACKSLASH)) return undefined;
    const isContent = buf.subarray(i, keyEnd + 1).equals(CONTENT_KEY);
    i = skipWs(buf, keyEnd + 1);
    if (buf[i] !== 0x3a) return undefined;
    i = skipWs(buf, i + 1);
    const end = valueEnd(buf, i);
    if (end < 0) return undefined;
    if (isContent) {
      if (found || buf[i] !== QUOTE) return undefined;
      found = { start: i + 1, end: end - 1 };
    }
    i = skipWs(buf, end);
    if (buf[i] === 0x2c) i = skipWs(buf, i + 1);
    else if (buf[i] === 0x7d) return skipWs(buf, i + 1) === buf.length ? found : undefined;
    else return undefined;
  }
  return undefined;
}

/** JSON.parse would unescape or refuse these: such content goes the ordinary way. */
function hasEscapeOrControl(buf: Buffer, start: number, end: number): boolean {
  const backslash = buf.indexOf(BACKSLASH, start);
  if (backslash >= 0 && backslash < end) return true;
  // In pieces (native regex, small strings) rather than byte by byte in JavaScript.
  for (let j = start; j < end; j += PIECE) {
    if (CONTROL.test(buf.toString('latin1', j, Math.min(end, j + PIECE)))) return true;
  }
  return false;
}

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\x00-\x1f]/;
/** Decoded in pieces of this many characters (a multiple of 4): no string of the whole. */
const PIECE = 64 * 1024;
const BASE64_PIECE = /^[A-Za-z0-9+/]*$/;
const BASE64_LAST_PIECE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Strict base64 straight from bytes, or undefined when the bytes are anything but plain, padded
 * base64 (whitespace included): decodeContent then decides, and words its refusal, as before.
 */
function decodeBase64(chars: Buffer): Buffer | undefined {
  const n = chars.length;
  if (n % 4 !== 0) return undefined;
  const padding = n > 0 && chars[n - 1] === 0x3d ? (chars[n - 2] === 0x3d ? 2 : 1) : 0;
  const out = Buffer.allocUnsafe((n / 4) * 3 - padding);
  let written = 0;
  for (let j = 0; j < n; j += PIECE) {
    const last = j + PIECE >= n;
    const piece = chars.toString('latin1', j, Math.min(n, j + PIECE));
    if (!(last ? BASE64_LAST_PIECE : BASE64_PIECE).test(piece)) return undefined;
    written += out.write(piece, written, 'base64');
  }
  if (written !== out.length)
    throw new AppError('INVALID_CONTENT', { message: 'content is not valid base64' });
  return out;
}
