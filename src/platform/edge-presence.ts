import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Executor } from '../store/index.js';

/** Every so many heartbeats, rows of processes gone for an hour are deleted. */
const SWEEP_EVERY = 20;

/*
 * An edge process's registration in edge_processes: a row whose lease it renews every quarter of
 * the lease. A deploy switch, after its commit, asks on the site channel for acknowledgements and
 * waits for every process whose lease runs (site-events.ts); a process answers only what it heard
 * on its LISTEN connection, in commit order, so an answer means it has applied the switch.
 *
 * A switch does not wait for a process whose lease ended, so such a process must not answer from
 * its caches: `holds()` is true only until the send time of its last successful renewal plus the
 * lease, less a fifth (on its own monotonic clock; the database set the lease from its now(), which
 * came later, so the process's view ends first unless the database's clock jumps ahead by more). When a renewal succeeds after that, the lease may have lapsed
 * in the database meanwhile and switches gone by unacknowledged: `onRegained` drops the caches.
 * The first registration counts as such (a process that starts after a switch reads it fresh).
 */
export class EdgePresence {
  readonly id = randomUUID();
  private validUntil = -Infinity;
  private stopped = false;
  private beats = 0;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;

  constructor(
    private readonly db: Executor,
    private readonly leaseMs: number,
    private readonly onRegained: () => void,
  ) {}

  /** Whether this process's lease surely still runs in the database. */
  holds(now = performance.now()): boolean {
    return now < this.validUntil;
  }

  /** Starts renewing (the first registration is under way when this returns). */
  start(): void {
    const loop = async () => {
      if (this.stopped) return;
      this.current = this.beat();
      await this.current;
      if (this.stopped) return;
      this.timer = setTimeout(() => void loop(), Math.max(50, Math.floor(this.leaseMs / 4)));
      this.timer.unref();
    };
    void loop();
  }

  /** Stops answering from caches at once, then deletes the row (best effort). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.validUntil = -Infinity;
    clearTimeout(this.timer);
    await this.current; // a renewal in flight must not put the row back after the delete
    await this.db.execute(sql`delete from edge_processes where id = ${this.id}`).catch(() => {});
  }

  private async beat(): Promise<void> {
    const sent = performance.now();
    try {
      await this.db.execute(sql`
        insert into edge_processes (id, lease_until)
        values (${this.id}, now() + ${this.leaseMs}::int * interval '1 millisecond')
        on conflict (id) do update set lease_until = excluded.lease_until`);
      if (++this.beats % SWEEP_EVERY === 1)
        await this.db.execute(sql`delete from edge_processes where lease_until < now() - interval '1 hour'`);
    } catch {
      return; // the lease runs out on its own; the next beat tries again
    }
    if (this.stopped) return;
    const lapsed = !this.holds();
    // A fifth of the lease kept back: room for the database's clock to run a little fast.
    this.validUntil = Math.max(this.validUntil, sent + this.leaseMs * 0.8);
    if (lapsed) this.onRegained();
  }
}
