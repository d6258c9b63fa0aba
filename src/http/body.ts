import express, { type RequestHandler } from 'express';
import type { AppError } from '../errors/index.js';

/**
 * A JSON body parser with its own size limit. `onTooLarge` lets a route answer an oversized body
 * in the spec's words (e.g. 400 "File too large") instead of the generic 413.
 */
export function jsonBody(limit: string, onTooLarge?: () => AppError): RequestHandler {
  // Every body of these endpoints is JSON: parse it whatever Content-Type says (curl -d sends
  // form encoding), so a missing header gives a clear JSON error rather than "field is required".
  const parse = express.json({ limit, strict: true, type: () => true });
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
