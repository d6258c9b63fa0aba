import type { Request, RequestHandler } from 'express';
import type { UploadAdmission } from '../http/index.js';
import { MAX_FILE_BYTES } from './service.js';
import { directLength } from './upload-body.js';
import { bulkUploadCost } from './deploy-bulk.js';

/*
 * What each upload route's body may cost in memory, from its declared Content-Length: the files
 * domain's side of admission by bytes (src/http/upload-admission.ts; the budget is the process's).
 */

const MiB = 1024 * 1024;
/** The JSON upload's largest body (base64 of 10 MB plus framing), as its parser's limit. */
const JSON_LIMIT_BYTES = 15 * MiB;
/** A streamed body (video, blob over 10 MB) holds at most the S3 store's two 8 MiB parts. */
const STREAMED_BYTES = 16 * MiB;

/**
 * JSON upload: express.json holds a body about five times over (chunks, their concatenation, the
 * string, the parsed `content`, the decoded bytes); the direct path of large bodies twice (one buffer
 * of the body, then the decoded bytes, three quarters of it). Which reader takes it is
 * upload-body.ts's choice (`direct`): a chunked or encoded body (no usable length) and one of
 * another Content-Type (curl -d) go to express.json, up to its limit.
 */
export const jsonUploadCost = (declared: number | undefined, direct = false) =>
  declared === undefined ? 5 * JSON_LIMIT_BYTES : direct ? 2 * declared : 5 * declared;

/** Video upload: streamed to the blob store through bounded buffers, whatever its size. */
export const videoUploadCost = (declared: number | undefined) =>
  Math.min(declared ?? Infinity, STREAMED_BYTES);

/**
 * Deploy blob: up to 10 MB read whole (the chunks, then their concatenation: twice), bigger ones
 * (videos) streamed to a staged object. Chunked: the in-memory worst case.
 */
export const blobUploadCost = (declared: number | undefined) =>
  declared === undefined || declared <= MAX_FILE_BYTES ? 2 * (declared ?? MAX_FILE_BYTES) : STREAMED_BYTES;

export interface UploadAdmit {
  json: RequestHandler;
  video: RequestHandler;
  blob: RequestHandler;
  /** A bulk upload of deploy blobs: one reservation for the request, whatever its parts. */
  bulk: RequestHandler;
}

/** The files routes' admission middleware, for each kind of body. */
export function uploadAdmit(admission: UploadAdmission): UploadAdmit {
  return {
    json: admission.admit(siteKeyOf, (declared, req) =>
      jsonUploadCost(declared, declared !== undefined && directLength(req) === declared),
    ),
    video: admission.admit(siteKeyOf, videoUploadCost),
    blob: admission.admit(siteKeyOf, blobUploadCost),
    bulk: admission.admit(siteKeyOf, bulkUploadCost),
  };
}

/**
 * Whose share an upload counts in, as far as it is known before the body: a key names its site; a
 * session, its account. (Not the session's `site_id`: that is checked only after the body is read,
 * so a share per value would let one session hold the whole budget with made-up ids.)
 */
function siteKeyOf(req: Request): string {
  const principal = req.principal;
  if (principal?.siteId !== undefined) return `site:${principal.siteId}`;
  return `account:${principal?.accountId ?? 0}`;
}
