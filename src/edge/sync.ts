import type { EdgePresence, SiteEvents } from '../platform/index.js';
import { edgeSyncWaits } from './metrics.js';

/** How long a request waits at most for a shared sync round trip when the caches are stale. */
const STALE_WAIT_MS = 1000;

/*
 * Several replicas: a deploy switch must be visible on every replica once its call returns, but
 * NOTIFY reaches the other replicas a little later. So every few hundred ms the edge sends a sync
 * NOTIFY on the site channel and waits to hear it back: notifications reach a listener in commit
 * order, so once it is back every change committed before it was sent has been applied here
 * (`syncedAt`). The edge answers from its path caches only while `syncedAt` is within the sync
 * window; otherwise it reads the database. A switch returns a full window after it commits, so any
 * request that starts later either meets a replica that has applied it, or one that reads the
 * database. (Durations only, on each process's monotonic clock: clock offsets do not matter.)
 *
 * Precisely, a request that started at t may use the caches once a round trip sent at or after
 * t - window came back (a switch it must see committed before that). So when PostgreSQL is slow
 * and the loop falls behind, a request does not go to the database at once: it waits (at most
 * STALE_WAIT_MS) for one round trip shared by every such request, and uses the caches when it
 * came back; only a round trip that fails sends requests to the database, so a stall is not
 * made worse by every edge request turning into a query.
 *
 * The switch does not wait out the window when every live edge process acknowledged it: each
 * registers with a lease (platform/edge-presence.ts) and answers a switch's acknowledgement request
 * once its LISTEN connection delivered it (after the switch's own notification, in commit order).
 * So the caches also answer only while this process's lease surely runs (a switch waits for it
 * then); a process whose lease lapsed reads the database, and drops its caches when it renews.
 */
export class SyncWindow {
  /** An empty cache reflects every commit so far: fresh from the start. */
  private syncedAt = performance.now();
  /** The round trip in flight, shared by the sync loop and requests that found the caches stale. */
  private trip: { sent: number; heard: Promise<boolean> } | undefined;
  /** This process's registration as a live edge process (several replicas only). */
  private presence: Pick<EdgePresence, 'holds'> | undefined;

  /**
   * `windowMs` undefined: one process, no replicas to keep in step (always fresh, no loop).
   * `onRegained`: drops every cache (the lease may have lapsed, and switches gone by unheard).
   */
  constructor(
    private readonly events: SiteEvents,
    private readonly windowMs: number | undefined,
    private readonly leaseMs: number,
    private readonly onRegained: () => void,
  ) {}

  /** Starts the sync loop and the registration; returns their stop. */
  start(): () => void {
    const windowMs = this.windowMs;
    if (windowMs === undefined) return () => {};
    this.presence = this.events.register(this.leaseMs, this.onRegained);
    let stopped = false;
    const every = Math.max(25, Math.floor(windowMs / 4));
    const loop = async () => {
      while (!stopped) {
        await this.roundTrip(performance.now(), windowMs * 2);
        await new Promise((resolve) => setTimeout(resolve, every).unref());
      }
    };
    void loop();
    return () => {
      stopped = true;
      this.presence = undefined;
      void this.events.unregister();
    };
  }

  /** Whether the caches may answer a request that started at `startedAt`. */
  fresh(startedAt = performance.now()): boolean {
    if (this.windowMs === undefined) return true;
    return this.inWindow(startedAt) && this.presence?.holds() === true;
  }

  private inWindow(startedAt: number): boolean {
    return startedAt - this.syncedAt <= this.windowMs!;
  }

  /** Waits for a shared round trip when the caches are stale for a request started at `startedAt`. */
  async catchUp(startedAt: number): Promise<void> {
    if (this.windowMs === undefined || this.inWindow(startedAt)) return;
    edgeSyncWaits.inc();
    await this.roundTrip(startedAt - this.windowMs, Math.max(STALE_WAIT_MS, this.windowMs * 2));
  }

  /** A round trip sent no earlier than `notBefore`: the one in flight if recent enough, else a new one. */
  private roundTrip(notBefore: number, timeoutMs: number): Promise<boolean> {
    const current = this.trip;
    if (current && current.sent >= notBefore) return current.heard;
    const sent = performance.now();
    const heard = this.events
      .roundTrip(timeoutMs)
      .catch(() => false)
      .then((ok) => {
        if (ok) this.syncedAt = Math.max(this.syncedAt, sent);
        if (this.trip === trip) this.trip = undefined;
        return ok;
      });
    const trip = { sent, heard };
    this.trip = trip;
    return heard;
  }
}
