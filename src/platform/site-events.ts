import { EventEmitter } from 'node:events';
import type { Store } from '../store/index.js';
import { ROUTES_CHANGED, SITE_CHANGED_CHANNEL } from './types.js';

/**
 * "Site N changed": emitted in-process right after a write commits (so an edge in the same
 * process never serves a stale page once the API has answered) and received from Postgres
 * NOTIFY for writes made by other processes.
 */
export class SiteEvents {
  private readonly emitter = new EventEmitter();
  private unlisten: (() => Promise<void>) | undefined;

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  async listen(store: Store): Promise<void> {
    this.unlisten = await store.listen(
      SITE_CHANGED_CHANNEL,
      (payload) => {
        if (payload === ROUTES_CHANGED) {
          this.emitter.emit('routes');
          return;
        }
        const siteId = Number(payload);
        if (Number.isInteger(siteId)) this.emitter.emit('changed', siteId);
      },
      // The connection was lost and re-established: changes in between may have been missed.
      () => this.emitter.emit('changed', 'all'),
    );
  }

  changed(siteId: number): void {
    this.emitter.emit('changed', siteId);
  }

  /** `all` means every site may have changed (notifications were possibly missed). */
  onChanged(handler: (siteId: number | 'all') => void): () => void {
    this.emitter.on('changed', handler);
    return () => this.emitter.off('changed', handler);
  }

  /** A slug or custom domain changed somewhere: host → site mappings may be stale. */
  onRoutesChanged(handler: () => void): () => void {
    this.emitter.on('routes', handler);
    return () => this.emitter.off('routes', handler);
  }

  async close(): Promise<void> {
    await this.unlisten?.();
  }
}
