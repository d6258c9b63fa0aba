import { objectKey, type Controller } from './controller.js';
import type { Informer, KubeObject } from './informer.js';

/**
 * Which informer updates bring a reconcile pass, as controller-runtime's predicates. A status
 * write of our own changes none of what these compare (only status and resourceVersion), so it
 * brings no pass; whatever an update filtered out leaves behind, the periodic resync converges.
 */
export type UpdatePredicate<T> = (obj: T, old: T) => boolean;

/** What the predicates read: the metadata every object has. */
interface WithMetadata {
  metadata?: {
    generation?: number;
    deletionTimestamp?: unknown;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

/** The spec changed: the API server bumps metadata.generation on every spec change, never on status. */
export const generationChanged: UpdatePredicate<WithMetadata> = (obj, old) =>
  obj.metadata?.generation !== old.metadata?.generation;

/** The deletion started, or a finalizer came or went (ours, after its patch; or another's). */
export const deletionOrFinalizersChanged: UpdatePredicate<WithMetadata> = (obj, old) =>
  Boolean(obj.metadata?.deletionTimestamp) !== Boolean(old.metadata?.deletionTimestamp) ||
  !sameList(obj.metadata?.finalizers, old.metadata?.finalizers);

export const annotationsChanged: UpdatePredicate<WithMetadata> = (obj, old) =>
  !sameRecord(obj.metadata?.annotations, old.metadata?.annotations);

export const labelsChanged: UpdatePredicate<WithMetadata> = (obj, old) =>
  !sameRecord(obj.metadata?.labels, old.metadata?.labels);

/** True when any of `predicates` is. */
export function anyOf<T>(...predicates: UpdatePredicate<T>[]): UpdatePredicate<T> {
  return (obj, old) => predicates.some((predicate) => predicate(obj, old));
}

/** `handler` for the updates `predicate` lets through. */
export function when<T>(predicate: UpdatePredicate<T>, handler: (obj: T) => void): (obj: T, old: T) => void {
  return (obj, old) => {
    if (predicate(obj, old)) handler(obj);
  };
}

/**
 * The controller's own kind: every add and delete queues the object's key, an update only when
 * `update` lets it through.
 */
export function watchPrimary<T extends KubeObject>(
  informer: Pick<Informer<T>, 'on'>,
  controller: Pick<Controller, 'enqueue'>,
  update: UpdatePredicate<T>,
): void {
  const enqueue = (obj: T): void => controller.enqueue(objectKey(obj));
  informer.on('add', enqueue);
  informer.on('update', when(update, enqueue));
  informer.on('delete', enqueue);
}

function sameList(a: readonly string[] = [], b: readonly string[] = []): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

function sameRecord(a: Record<string, string> = {}, b: Record<string, string> = {}): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
