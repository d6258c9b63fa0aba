import type { Request, RequestHandler } from 'express';
import { AppError } from '../errors/index.js';
import { uploadRefusalsTotal, uploadsInFlight } from './metrics.js';

/** What a refused client is told to wait: about the time a 10 MB upload takes. */
const RETRY_AFTER_SECONDS = 2;

/**
 * Bounds how many uploads one process holds at once, in all and per site, so a burst of large
 * uploads is refused (503 / 429 with Retry-After) instead of exhausting memory. It runs after the
 * credential check and before the body is read, so a refused upload never costs its body's memory.
 *
 * The counts are per process on purpose: what they bound is this process's memory. (A site's
 * uploads spread over N replicas may run N × maxPerSite at once.) By default a site may hold a
 * quarter of the slots (src/config), and a body that stops arriving loses its slot within the body
 * deadline (src/http/body-deadline.ts): slow clients of a few sites cannot hold every slot.
 */
export class UploadSlots {
  private inFlight = 0;
  private readonly perSite = new Map<string, number>();

  constructor(private readonly limits: { maxConcurrent: number; maxPerSite: number }) {}

  /** Uploads in flight now: in all, or for one site key. */
  count(siteKey?: string): number {
    return siteKey === undefined ? this.inFlight : (this.perSite.get(siteKey) ?? 0);
  }

  readonly admit: RequestHandler = (req, res, next) => {
    const site = siteKeyOf(req);
    if (this.inFlight >= this.limits.maxConcurrent) {
      uploadRefusalsTotal.inc({ cap: 'process' });
      next(
        new AppError('CAPACITY', {
          message: `This server is receiving ${this.inFlight} uploads already; try again in a moment.`,
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        }),
      );
      return;
    }
    const forSite = this.perSite.get(site) ?? 0;
    if (forSite >= this.limits.maxPerSite) {
      uploadRefusalsTotal.inc({ cap: 'site' });
      next(
        new AppError('RATE_LIMITED', {
          message: `At most ${this.limits.maxPerSite} upload${this.limits.maxPerSite === 1 ? '' : 's'} to one site at a time; wait for one to finish.`,
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        }),
      );
      return;
    }
    this.inFlight += 1;
    this.perSite.set(site, forSite + 1);
    uploadsInFlight.inc();
    let released = false;
    // 'close' comes once the response is sent or the connection is gone, whichever is first.
    res.once('close', () => {
      if (released) return;
      released = true;
      this.inFlight -= 1;
      const left = (this.perSite.get(site) ?? 1) - 1;
      if (left > 0) this.perSite.set(site, left);
      else this.perSite.delete(site);
      uploadsInFlight.dec();
    });
    next();
  };
}

/**
 * The site an upload goes to, as far as it is known before the body: a key names its site; a
 * session names one with `site_id` (or means its account's first site).
 */
function siteKeyOf(req: Request): string {
  const principal = req.principal;
  if (principal?.siteId !== undefined) return `site:${principal.siteId}`;
  const requested = typeof req.query.site_id === 'string' ? req.query.site_id : '';
  return `account:${principal?.accountId ?? 0}:${requested}`;
}
