import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors/index.js';
import { jsonNestsDeeper, jsonTooDeepMessage } from './json-depth.js';

/** A body-parser style failure that bodyRefusal() maps to a registry code. */
function refusal(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, type, expose: true });
}

/**
 * JSON is UTF-8 (RFC 8259): a body in another charset, or with bytes that are not UTF-8, is
 * refused rather than transcoded, so what is stored is exactly what was sent. A body nested deeper
 * than MAX_JSON_DEPTH is refused before it is parsed.
 */
function onlyUtf8(_req: unknown, _res: unknown, buf: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8') {
    throw refusal(415, 'charset.unsupported', 'Send the body as UTF-8 JSON.');
  }
  if (!isUtf8(buf)) throw refusal(400, 'encoding.invalid', 'The request body is not valid UTF-8.');
  if (jsonNestsDeeper(buf)) throw refusal(400, 'entity.too.deep', jsonTooDeepMessage);
}

/**
 * A JSON body parser with its own size limit. `onTooLarge` lets a route answer an oversized body
 * in the spec's words (e.g. 400 "File too large") instead of the generic 413.
 */
export function jsonBody(limit: string, onTooLarge?: () => AppError): RequestHandler {
  // Every body of these endpoints is JSON: parse it whatever Content-Type says (curl -d sends
  // form encoding), so a missing header gives a clear JSON error rather than "field is required".
  const parse = express.json({ limit, strict: true, type: () => true, verify: onlyUtf8 });
  return (req, res, next) => {
    parse(req, res, (err?: unknown) => {
      if (err && onTooLarge && (err as { type?: string }).type === 'entity.too.large') {
        next(onTooLarge());
        return;
      }
      next(err);
    });
  };
}

/**
 * Refuses a body not declared JSON (`application/json` or `…+json`), for routes a browser page must
 * not reach with a simple request: a form or a no-cors fetch can send only text/plain, form or
 * multipart bodies without a CORS preflight (which the API never grants). Most routes parse any
 * type instead (curl -d); the account routes, where a forged sign-in matters, use this.
 */
export const requireJsonType: RequestHandler = (req, _res, next) => {
  const type = req.headers['content-type'] ?? '';
  if (/^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(type)) return next();
  next(
    new AppError('UNSUPPORTED_MEDIA_TYPE', {
      message: 'Send the body as JSON with Content-Type: application/json.',
    }),
  );
};
