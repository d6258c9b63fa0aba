import type {
  AnyResource,
  Condition,
  CustomResource,
  ResourceClient,
  StatusOf,
} from '../../src/kube/index.js';

// What every reconciler of a custom resource does the same way: conditions stamped with the
// generation they describe, status written only when it changed, and finalizers.

/** The part of a status every kind has (statusBase in resources.ts). */
export interface StatusBase {
  observedGeneration?: number;
  conditions?: Condition[];
}

type WithStatus = CustomResource<unknown, StatusBase>;

export function findCondition(resource: WithStatus, type: string): Condition | undefined {
  return resource.status?.conditions?.find((c) => c.type === type);
}

/**
 * A condition of `type` for the resource's current generation. lastTransitionTime is kept while
 * the status stays the same, so it tells when the condition last flipped, not when it was written.
 */
export function condition(
  resource: WithStatus,
  type: string,
  status: Condition['status'],
  reason: string,
  message: string,
): Condition {
  const previous = findCondition(resource, type);
  return {
    type,
    status,
    observedGeneration: resource.metadata.generation ?? 0,
    lastTransitionTime:
      previous && previous.status === status
        ? previous.lastTransitionTime
        : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    reason,
    message,
  };
}

/**
 * Replaces the status with `status` stamped with the resource's generation, unless that is what
 * it already says: an unchanged status makes no write, so no watch event and no further pass.
 * Returns whether it wrote. A stale resourceVersion answers 409 (the caller retries).
 */
export async function writeStatusIfChanged<R extends AnyResource & WithStatus>(
  client: ResourceClient<R>,
  resource: R,
  status: Omit<StatusOf<R>, 'observedGeneration'>,
): Promise<boolean> {
  const next = {
    ...dropUndefined(status),
    observedGeneration: resource.metadata.generation ?? 0,
  } as StatusOf<R>;
  if (sameJson(next, resource.status ?? {})) return false;
  await client.replaceStatus(resource, next);
  return true;
}

/** The condition every kind reports: whether the resource is in the state its spec asks for. */
export const READY = 'Ready';

/**
 * A status that only says why the resource is not Ready: whatever it reported before no longer
 * holds for this generation.
 */
export async function writeNotReady<R extends AnyResource & WithStatus>(
  client: ResourceClient<R>,
  resource: R,
  reason: string,
  message: string,
): Promise<void> {
  await writeStatusIfChanged(client, resource, {
    conditions: [condition(resource, READY, 'False', reason, message)],
  } as Omit<StatusOf<R>, 'observedGeneration'>);
}

/** The object is being deleted and waits for its finalizers. */
export const isBeingDeleted = (resource: AnyResource): boolean =>
  resource.metadata.deletionTimestamp !== undefined && resource.metadata.deletionTimestamp !== null;

export const hasFinalizer = (resource: AnyResource, finalizer: string): boolean =>
  resource.metadata.finalizers?.includes(finalizer) ?? false;

/**
 * Makes sure `finalizer` is on a live resource before anything is created for it, so that a
 * deletion always waits for the cleanup. Returns true when it had to patch: the patch's watch
 * event brings the next pass, which should start over from the new version.
 */
export async function ensureFinalizer<R extends AnyResource>(
  client: ResourceClient<R>,
  resource: R,
  finalizer: string,
): Promise<boolean> {
  if (hasFinalizer(resource, finalizer)) return false;
  await client.addFinalizer(resource, finalizer);
  return true;
}

/** Lets a deletion finish once the cleanup behind `finalizer` is done. */
export async function releaseFinalizer<R extends AnyResource>(
  client: ResourceClient<R>,
  resource: R,
  finalizer: string,
): Promise<void> {
  await client.removeFinalizer(resource, finalizer);
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Equal as JSON, ignoring key order and undefined fields. */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}
