import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { sql, type SQL } from 'drizzle-orm';
import { CHANNELS, type Store } from '../store/index.js';
import { EdgePresence } from './edge-presence.js';

/** What changed about a site, as every replica hears it. */
export type SiteEvent =
  /** Its files or its live deploy: what its URLs answer. */
  | { kind: 'content'; siteId: number }
  /** A slug or custom domain, somewhere (or a site detached): which host is which site. */
  | { kind: 'routes' }
  /** The site is gone, with everything that belonged to it. */
  | { kind: 'removed'; siteId: number };

/**
 * What a cache does on each event it cares about. `missed` is required: after a lost listening
 * connection any event may have gone unheard, so every cache must say how it starts over.
 */
export interface SiteEventHandlers {
  contentChanged?(siteId: number): void;
  routesChanged?(): void;
  siteRemoved?(siteId: number): void;
  missed(): void;
}

/**
 * The NOTIFY payloads on CHANNELS.site: a site id alone is a content change (the form
 * usage.ts sends from SQL), `routes`, and `removed:<id>`.
 */
const ROUTES = 'routes';
const REMOVED = 'removed:';
/** `sync:<marker>`: a process's own round trip through the channel (see roundTrip). */
const SYNC = 'sync:';
/** `ackreq:<token>`: a switch asks every live edge process to acknowledge (see awaitAcks). */
const ACK_REQUEST = 'ackreq:';
/** `ack:<token>:<edge process id>`: an edge process's answer. */
const ACK = 'ack:';

function encode(event: SiteEvent): string {
  if (event.kind === 'routes') return ROUTES;
  return event.kind === 'removed' ? `${REMOVED}${event.siteId}` : String(event.siteId);
}

function decode(payload: string): SiteEvent | undefined {
  if (payload === ROUTES) return { kind: 'routes' };
  const removed = payload.startsWith(REMOVED);
  const id = removed ? payload.slice(REMOVED.length) : payload;
  if (!/^\d+$/.test(id)) return undefined;
  return removed ? { kind: 'removed', siteId: Number(id) } : { kind: 'content', siteId: Number(id) };
}

/** The statement that announces `event` to every replica when the caller's transaction commits. */
export function notifySiteEvent(event: SiteEvent): SQL {
  return sql`select pg_notify(${CHANNELS.site}, ${encode(event)})`;
}

/**
 * The NOTIFY of a content change inside a statement: `siteIdSql` is a column of the rows that
 * changed (see usage.ts, where one statement counts the change and announces it).
 */
export function notifyContentChangedOf(siteIdSql: SQL): SQL {
  return sql`pg_notify(${CHANNELS.site}, (${siteIdSql})::text)`;
}

/**
 * Site events: emitted in-process right after a write commits (so an edge in the same process
 * never serves a stale page once the API has answered) and received from Postgres NOTIFY for
 * writes made by other processes.
 */
export class SiteEvents {
  private readonly emitter = new EventEmitter();
  private unlisten: (() => Promise<void>) | undefined;
  private store: Store | undefined;
  private readonly syncToken = randomUUID();
  private syncSeq = 0;
  private readonly syncWaiting = new Map<string, () => void>();
  /** This process's edge registration, if it serves sites on PostgreSQL: it answers acks then. */
  private presence: EdgePresence | undefined;
  /** The last registration's end, so that close() waits for a stop begun elsewhere (its row's delete). */
  private stopping: Promise<void> | undefined;
  private readonly ackWaiting = new Map<string, (edgeId: string) => void>();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  async listen(store: Store): Promise<void> {
    this.unlisten = await store.listen(
      CHANNELS.site,
      (payload) => {
        if (payload.startsWith(SYNC)) return this.syncWaiting.get(payload.slice(SYNC.length))?.();
        if (payload.startsWith(ACK_REQUEST)) return this.acknowledge(payload.slice(ACK_REQUEST.length));
        if (payload.startsWith(ACK)) {
          const [token, edgeId] = payload.slice(ACK.length).split(':');
          return edgeId ? this.ackWaiting.get(token!)?.(edgeId) : undefined;
        }
        const event = decode(payload);
        if (event) this.emit(event);
      },
      () => this.emitter.emit('missed'),
    );
    this.store = store;
  }

  /**
   * Sends a marker through the channel and resolves true once this process hears it back (within
   * `timeoutMs`): every event committed before it was sent has then been emitted here, since a
   * listener hears notifications in commit order. The edge's sync window is built on it.
   */
  async roundTrip(timeoutMs: number): Promise<boolean> {
    const store = this.store;
    if (!store) return false;
    const marker = `${this.syncToken}.${++this.syncSeq}`;
    let timer: NodeJS.Timeout | undefined;
    const heard = new Promise<boolean>((resolve) => {
      this.syncWaiting.set(marker, () => resolve(true));
      timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
    });
    try {
      await store.db.execute(sql`select pg_notify(${CHANNELS.site}, ${SYNC + marker})`);
      return await heard;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      this.syncWaiting.delete(marker);
    }
  }

  /**
   * Registers this process as a live edge process (a lease in edge_processes, renewed) that
   * answers switches' acknowledgement requests; `onRegained` drops its caches (edge-presence.ts).
   */
  register(leaseMs: number, onRegained: () => void): EdgePresence | undefined {
    const store = this.store;
    if (!store || this.presence) return undefined;
    const presence = new EdgePresence(store.db, leaseMs, onRegained);
    this.presence = presence;
    presence.start();
    return presence;
  }

  /** Ends this process's registration (it no longer answers acknowledgement requests). */
  async unregister(): Promise<void> {
    const presence = this.presence;
    this.presence = undefined;
    if (presence) this.stopping = presence.stop();
    await this.stopping;
  }

  /**
   * After a switch committed: asks every live edge process (lease running) to acknowledge, and
   * resolves true once each has (within `timeoutMs`), false otherwise. One statement reads the
   * live set and sends the request, so a process that registered before it was already listening
   * (it listens first) and hears the request after the switch; one that registers later starts
   * with empty caches. A process answers only what its LISTEN connection delivered, in commit
   * order: after the switch's own notification, whose handlers ran as it was heard.
   */
  async awaitAcks(timeoutMs: number): Promise<boolean> {
    const store = this.store;
    if (!store) return false;
    const token = randomUUID();
    const acked = new Set<string>();
    let expected: string[] | undefined;
    let done: (ok: boolean) => void = () => {};
    const all = new Promise<boolean>((resolve) => (done = resolve));
    const check = () => {
      if (expected?.every((id) => acked.has(id))) done(true);
    };
    this.ackWaiting.set(token, (edgeId) => {
      acked.add(edgeId);
      check();
    });
    const timer = setTimeout(() => done(false), timeoutMs);
    timer.unref();
    try {
      const [row] = (
        (await store.db.execute(sql`
          select array(select id from edge_processes where lease_until > now()) as ids,
            pg_notify(${CHANNELS.site}, ${ACK_REQUEST + token}) is null as sent`)) as unknown as {
          rows: Array<{ ids: string[] }>;
        }
      ).rows;
      expected = row?.ids ?? [];
      check();
      return await all;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      this.ackWaiting.delete(token);
    }
  }

  /**
   * Answers an acknowledgement request heard on the LISTEN connection, if this process is a
   * registered edge. On the next turn of the event loop: after the handlers of everything heard
   * before it, and after a reconnect's `missed` (a notification may arrive in the same read as a
   * new connection's LISTEN reply, before the reconnect is reported).
   */
  private acknowledge(token: string): void {
    const store = this.store;
    const presence = this.presence;
    if (!store || !presence) return;
    setImmediate(() => {
      if (this.presence !== presence) return;
      store.db
        .execute(sql`select pg_notify(${CHANNELS.site}, ${`${ACK}${token}:${presence.id}`})`)
        .catch(() => {});
    });
  }

  /** Tells this process at once; other replicas hear the NOTIFY sent in the write's transaction. */
  contentChanged(siteId: number): void {
    this.emit({ kind: 'content', siteId });
  }

  /** Subscribes `handlers` to the events they name; returns the unsubscribe function. */
  subscribe(handlers: SiteEventHandlers): () => void {
    const bound: Array<[string, (siteId: number) => void]> = [['missed', () => handlers.missed()]];
    if (handlers.contentChanged) bound.push(['content', handlers.contentChanged.bind(handlers)]);
    if (handlers.routesChanged) bound.push(['routes', handlers.routesChanged.bind(handlers)]);
    if (handlers.siteRemoved) bound.push(['removed', handlers.siteRemoved.bind(handlers)]);
    for (const [name, handler] of bound) this.emitter.on(name, handler);
    return () => {
      for (const [name, handler] of bound) this.emitter.off(name, handler);
    };
  }

  async close(): Promise<void> {
    await this.unregister();
    await this.unlisten?.();
  }

  private emit(event: SiteEvent): void {
    if (event.kind === 'routes') this.emitter.emit('routes');
    else this.emitter.emit(event.kind, event.siteId);
  }
}
