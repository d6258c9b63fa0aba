import type { Request, RequestHandler } from 'express';
import client from 'prom-client';
import { AppError } from '../errors/index.js';
import { registry } from '../observability/index.js';
import { ByteBudget, type ByteBudgetLimits } from './byte-budget.js';

/** What a refused client is told to wait: about the time a 10 MB upload takes. */
const RETRY_AFTER_SECONDS = 2;

const uploadsInFlight = new client.Gauge({
  name: 'hostplane_uploads_in_flight',
  help: 'Uploads (files, videos, deploy blobs, large MCP bodies) this process is receiving or storing now.',
  registers: [registry],
});

const uploadBytesInFlight = new client.Gauge({
  name: 'hostplane_uploads_in_flight_bytes',
  help: 'Bytes of the upload budget (HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB) the uploads in flight hold now: what their bodies may cost in memory.',
  registers: [registry],
});

const uploadRefusalsTotal = new client.Counter({
  name: 'hostplane_upload_refusals_total',
  help: 'Uploads refused before their body was read because the byte budget was spent, by cap (process, site).',
  labelNames: ['cap'] as const,
  registers: [registry],
});

const MiB = 1024 * 1024;
const mb = (bytes: number) => `${Math.round((bytes / MiB) * 10) / 10} MB`;

/**
 * What a route's body may cost in memory, from its declared Content-Length (undefined: a chunked
 * body, or one with a Content-Encoding, which the JSON parser inflates up to its own limit: its size
 * is unknown before it is read, the route's worst case). `req` tells which reader will take it.
 */
export type BodyCost = (declared: number | undefined, req: Request) => number;

/**
 * Admission of uploads by the bytes they may hold, not by their count (see ByteBudget). It runs
 * after the credential check and before the body is read, so a refused upload never costs its
 * body's memory; the reservation is released once the response is sent or the connection is gone
 * (an abort, or the body deadline of body-deadline.ts cutting a slow body), whichever is first.
 *
 * The budget is per process on purpose: what it bounds is this process's memory. (A site's uploads
 * spread over N replicas may hold N shares at once.)
 */
export class UploadAdmission {
  readonly budget: ByteBudget;

  constructor(limits: Omit<ByteBudgetLimits, 'minBytes'> & { minBytes?: number }) {
    // Every request costs something besides its body (its objects, the parser's chunks): 64 KiB.
    this.budget = new ByteBudget({ minBytes: 64 * 1024, ...limits });
  }

  /** Middleware admitting a route's body for the site `siteKey` names, at what `cost` says it may take. */
  admit(siteKey: (req: Request) => string, cost: BodyCost): RequestHandler {
    return (req, res, next) => {
      const site = siteKey(req);
      const reservation = this.budget.reserve(site, cost(declaredLength(req), req));
      if (!reservation.ok) {
        uploadRefusalsTotal.inc({ cap: reservation.cap });
        next(
          reservation.cap === 'site'
            ? new AppError('RATE_LIMITED', {
                message: `This site's uploads in flight already hold ${mb(reservation.held)} of at most ${mb(reservation.limit)} at a time; wait for one to finish.`,
                retryAfterSeconds: RETRY_AFTER_SECONDS,
              })
            : new AppError('CAPACITY', {
                message: `This server is receiving ${mb(reservation.held)} of uploads already; try again in a moment.`,
                retryAfterSeconds: RETRY_AFTER_SECONDS,
              }),
        );
        return;
      }
      uploadsInFlight.inc();
      uploadBytesInFlight.inc(reservation.bytes);
      // 'close' comes once the response is sent or the connection is gone, whichever is first.
      res.once('close', () => {
        reservation.release();
        uploadsInFlight.dec();
        uploadBytesInFlight.dec(reservation.bytes);
      });
      next();
    };
  }
}

/**
 * The request's Content-Length, or undefined when it has none (chunked), it is not a number, or the
 * body is encoded (gzip, deflate, br): express.json inflates such a body, so its length on the wire
 * says nothing of what it holds once read.
 */
function declaredLength(req: Request): number | undefined {
  const coding = req.headers['content-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') return undefined;
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}
