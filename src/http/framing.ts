import type { RequestHandler } from 'express';

/**
 * The API host is the console's origin, so none of its answers may be framed by another site
 * (clickjacking the console, the reference or a temporary page). Every answer of the app gets
 * `frame-ancestors 'none'` (and `X-Frame-Options: DENY` for browsers without CSP 2) before any
 * route runs; a route that sends its own `Content-Security-Policy` (the console, /docs, temporary
 * pages) keeps `frame-ancestors 'none'` in it. Site hosts never reach the app (the edge serves
 * them, and a site may be framed if its owner wants).
 */
export const FRAME_ANCESTORS_NONE = "frame-ancestors 'none'";

export const denyFraming: RequestHandler = (_req, res, next) => {
  res.setHeader('Content-Security-Policy', FRAME_ANCESTORS_NONE);
  res.setHeader('X-Frame-Options', 'DENY');
  next();
};
