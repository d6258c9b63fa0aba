import type { z } from 'zod';
import { isConflict, type AnyResource, type ResourceClient } from '../../src/kube/index.js';
import { splitKey, type ReconcileResult, type Reconciler } from './controller.js';
import type { EventRecorder } from './events.js';
import type { Informer } from './informer.js';
import {
  ensureFinalizer,
  hasFinalizer,
  isBeingDeleted,
  releaseFinalizer,
  writeNotReady,
  type StatusBase,
} from './reconcile-helpers.js';

/** After a 409 (our copy was stale): soon, the watch event with the new version is on its way. */
export const CONFLICT_RETRY_MS = 200;
/** After a refusal that a change elsewhere may lift (a taken slug, a Site not linked yet, a cap). */
export const WAITING_RETRY_MS = 30_000;

/** A step that could not be done, and why (a Warning Event and the Ready condition's reason). */
export interface Refusal {
  refused: string;
  reason: string;
}

export const isRefusal = (value: unknown): value is Refusal =>
  typeof value === 'object' && value !== null && 'refused' in value;

/** A refusal reported on `resource`: the resource as last written (linking may have patched it). */
export type RefusedOn<R> = Refusal & { resource: R };

/** What the cleanup behind the finalizer reports: release it on `release`, or look again later. */
export type Cleanup<R> = { release: R } | { requeueAfterMs: number };

type Resource = AnyResource & { status?: StatusBase };

/**
 * What one kind fills in; ResourceReconciler runs the parts in the same order for every kind.
 * The kind's own modules hold them: orchestration.ts, deletion.ts, status.ts, database-link.ts.
 */
export interface KindParts<R extends Resource, S> {
  /** The kind's cache: a pass reads the resource from it, never from the API server. */
  cache: Pick<Informer<R>, 'get'>;
  /** Finalizer patches and status writes. */
  client: ResourceClient<R>;
  events: EventRecorder;
  /** Put on every live resource before anything is made for it; deletion waits for its cleanup. */
  finalizer: string;
  /** What the spec must satisfy beyond the CRD's schema; a spec that fails it is reported, not acted on. */
  specSchema: z.ZodType<S>;
  /** Behind the finalizer of a deleted resource: undoes what orchestrate made. */
  cleanUp(resource: R): Promise<Cleanup<R>>;
  /**
   * Drives a live resource with a valid spec to its state and writes its status. A refusal is
   * reported for it (Warning Event, Ready False) and looked at again after WAITING_RETRY_MS.
   */
  orchestrate(resource: R, spec: S): Promise<ReconcileResult | RefusedOn<R> | void>;
}

/**
 * The reconcile pass every kind takes, like a CloudNativePG controller's Reconcile: get the
 * resource from the cache; deleted → its cleanup, then release the finalizer; live → ensure the
 * finalizer, check the spec, orchestrate; a 409 is requeued shortly. Level-triggered and
 * idempotent: every pass recomputes everything from the resource.
 */
export class ResourceReconciler<R extends Resource, S> implements Reconciler {
  constructor(private readonly parts: KindParts<R, S>) {}

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const resource = this.parts.cache.get(namespace, name);
    if (!resource) return; // gone; the finalizer already cleaned up
    try {
      if (isBeingDeleted(resource)) return await this.finalize(resource);
      return await this.reconcileLive(resource);
    } catch (err) {
      // Someone changed the resource after our cache copy: its watch event is on the way, and the
      // retry reads the new version. Expected under concurrent writers, so not an error.
      if (isConflict(err)) return { requeueAfterMs: CONFLICT_RETRY_MS };
      throw err;
    }
  }

  private async finalize(resource: R): Promise<ReconcileResult | void> {
    const { client, finalizer } = this.parts;
    if (!hasFinalizer(resource, finalizer)) return;
    const cleanup = await this.parts.cleanUp(resource);
    if (!('release' in cleanup)) return cleanup;
    await releaseFinalizer(client, cleanup.release, finalizer);
  }

  private async reconcileLive(resource: R): Promise<ReconcileResult | void> {
    const { client, events } = this.parts;
    // The patch changes the resource; its watch event brings the next pass.
    if (await ensureFinalizer(client, resource, this.parts.finalizer)) return;

    const parsed = this.parts.specSchema.safeParse(resource.spec);
    if (!parsed.success) {
      const message = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      await writeNotReady(client, resource, 'InvalidSpec', message);
      return;
    }

    const outcome = await this.parts.orchestrate(resource, parsed.data);
    if (!isRefusal(outcome)) return outcome;
    events.warning(outcome.resource, outcome.reason, outcome.refused);
    await writeNotReady(client, outcome.resource, outcome.reason, outcome.refused);
    return { requeueAfterMs: WAITING_RETRY_MS };
  }
}
