/**
 * A process-wide budget of request-body bytes in flight, shared between sites (pure logic: no
 * request, no clock). What it bounds is this process's memory: uploads are admitted by what their
 * body may cost, not by how many there are, so many small uploads run side by side while a burst of
 * large ones waits its turn.
 *
 * Fairness is a cap per site: one site (a site key) holds at most `maxSiteBytes` (by default a
 * quarter of the budget). One site's large uploads therefore leave at least three quarters of the
 * budget to the others, and a site asking for its first upload finds room unless three other sites
 * each hold their full share. A reservation is never more than a site's share (a body bigger than
 * the share reserves the share), so every upload can be admitted on a quiet process, whatever the
 * budget; and never less than `minBytes`, which stands for what any request costs besides its body
 * and bounds how many tiny uploads one process takes at once.
 */
export interface ByteBudgetLimits {
  /** Bytes in flight in the whole process. */
  maxBytes: number;
  /** Bytes in flight for one site key. */
  maxSiteBytes: number;
  /** The smallest reservation (a request's own cost besides its body). */
  minBytes: number;
}

export type Reservation =
  | { ok: true; bytes: number; release: () => void }
  | { ok: false; cap: 'process' | 'site'; held: number; limit: number };

export class ByteBudget {
  private used = 0;
  private count = 0;
  private readonly perSite = new Map<string, number>();

  constructor(readonly limits: ByteBudgetLimits) {
    if (limits.maxSiteBytes > limits.maxBytes) throw new Error('a site’s share exceeds the budget');
  }

  /** Bytes reserved now: in all, or by one site key. */
  bytes(siteKey?: string): number {
    return siteKey === undefined ? this.used : (this.perSite.get(siteKey) ?? 0);
  }

  /** Reservations held now. */
  inFlight(): number {
    return this.count;
  }

  /** What a body of `declared` bytes reserves (see the class comment). */
  cost(declared: number): number {
    return Math.min(this.limits.maxSiteBytes, Math.max(this.limits.minBytes, Math.ceil(declared)));
  }

  /**
   * Reserves what a body of `declared` bytes costs for `siteKey`, or says which cap refuses it.
   * The site's cap is checked first: a site over its share is told to slow down (429) even when the
   * process is full too, since its own uploads are what it can wait for.
   */
  reserve(siteKey: string, declared: number): Reservation {
    const bytes = this.cost(declared);
    const forSite = this.perSite.get(siteKey) ?? 0;
    if (forSite + bytes > this.limits.maxSiteBytes)
      return { ok: false, cap: 'site', held: forSite, limit: this.limits.maxSiteBytes };
    if (this.used + bytes > this.limits.maxBytes)
      return { ok: false, cap: 'process', held: this.used, limit: this.limits.maxBytes };
    this.used += bytes;
    this.count += 1;
    this.perSite.set(siteKey, forSite + bytes);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.used -= bytes;
      this.count -= 1;
      const left = (this.perSite.get(siteKey) ?? bytes) - bytes;
      if (left > 0) this.perSite.set(siteKey, left);
      else this.perSite.delete(siteKey);
    };
    return { ok: true, bytes, release };
  }
}
