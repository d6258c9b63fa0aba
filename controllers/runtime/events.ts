import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CustomResource } from '../../src/kube/index.js';

/** The object an Event is about: any custom resource (or anything shaped like one). */
export type InvolvedObject = Pick<CustomResource<unknown, unknown>, 'apiVersion' | 'kind' | 'metadata'>;

/**
 * Records core/v1 Events on resources (what `kubectl describe` shows). Fire-and-forget: a failed
 * Event is logged, never fails a reconcile. The same reason and message for the same object is
 * recorded once per 10 minutes, so a resource that keeps failing does not flood the namespace.
 */
export class EventRecorder {
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly core: CoreV1Api,
    private readonly component: string,
    /** This process (the pod name): shows which replica acted. */
    private readonly instance: string,
    private readonly logger: Logger,
  ) {}

  normal(object: InvolvedObject, reason: string, message: string): void {
    this.record(object, 'Normal', reason, message);
  }

  warning(object: InvolvedObject, reason: string, message: string): void {
    this.record(object, 'Warning', reason, message);
  }

  private record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { name, namespace, uid } = object.metadata;
    const dedupeKey = `${uid ?? name}\0${reason}\0${message}`;
    const now = Date.now();
    if ((this.recent.get(dedupeKey) ?? 0) > now - 10 * 60_000) return;
    this.recent.set(dedupeKey, now);
    if (this.recent.size > 10_000) this.recent.clear();
    const time = new Date(now);
    this.core
      .createNamespacedEvent({
        namespace: namespace ?? 'default',
        body: {
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: {
            apiVersion: object.apiVersion,
            kind: object.kind,
            name,
            namespace,
            uid,
            resourceVersion: object.metadata.resourceVersion,
          },
          type,
          reason,
          message,
          source: { component: this.component, host: this.instance },
          reportingComponent: this.component,
          reportingInstance: this.instance,
          firstTimestamp: time,
          lastTimestamp: time,
          count: 1,
        },
      })
      .catch((err: unknown) => this.logger.warn({ err, reason, object: name }, 'could not record event'));
  }
}
