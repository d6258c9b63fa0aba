import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import type { Db } from '../store/index.js';
import { FormsService, type FormChanges, type FormScope, type FormsHooks, type NewForm } from './service.js';
import type { FormRow } from './tables.js';

type Kube = typeof import('../kube/index.js');

export interface FormResourceTarget {
  namespace: string;
  requestTimeoutMs: number;
  /** Default: the pod's service account (or $KUBECONFIG). */
  kubeConfig?: KubeConfig;
  logger: Logger;
}

/**
 * FormsService in cluster mode: every API write commits to PostgreSQL first, then makes the
 * form's `Form` resource say what the database now says (created on create; name, active and
 * notification address merged on change, with the annotation that stamps them as the database's;
 * deleted on delete). A failed apply is logged, never the request's failure:
 * the Form controller's resync creates a missing resource, and deletes one whose form is gone.
 * The controller uses the plain FormsService (its writes come from the resource).
 */
export class ClusterFormsService extends FormsService {
  private kube: Promise<{ kube: Kube; clients: ReturnType<Kube['kubeClients']> }> | undefined;

  constructor(
    db: Db,
    private readonly sitePlatform: Platform,
    hooks: FormsHooks,
    private readonly target: FormResourceTarget,
  ) {
    super(db, sitePlatform, hooks);
  }

  override async create(siteId: number, input: NewForm, resourceUid?: string): Promise<FormRow> {
    const row = await super.create(siteId, input, resourceUid);
    if (resourceUid === undefined) await this.applyResource(row);
    return row;
  }

  override async update(scope: FormScope, id: number, changes: FormChanges): Promise<FormRow> {
    const row = await super.update(scope, id, changes);
    const carried = ['name', 'is_active', 'notification_email'] as const;
    if (carried.some((key) => changes[key] !== undefined)) await this.applyResource(row);
    return row;
  }

  override async toggle(scope: FormScope, id: number): Promise<FormRow> {
    const row = await super.toggle(scope, id);
    await this.applyResource(row);
    return row;
  }

  override async delete(scope: FormScope, id: number): Promise<FormRow> {
    const row = await super.delete(scope, id);
    await this.attempt(row, 'delete', async ({ kube, clients }) => {
      await kube.deleteFormResources(clients.forms, row.id);
    });
    return row;
  }

  /** Creates or updates the form's resource; skipped while its site has no Site resource. */
  private async applyResource(row: FormRow): Promise<void> {
    await this.attempt(row, 'apply', async ({ kube, clients }) => {
      const routing = await this.sitePlatform.siteRouting(row.siteId);
      if (!routing || routing.detached) return;
      const site = await this.siteResource(kube, clients, row.siteId, routing.slug, routing.resourceUid);
      if (!site) {
        this.target.logger.info(
          { formId: row.id, siteId: row.siteId },
          'the site has no Site resource yet; the controller resync will create the Form resource',
        );
        return;
      }
      // The form as it is when the resource is written, not as this request left it: of two
      // concurrent requests, the one that committed first must not apply last.
      await kube.syncFormResource(clients.forms, row.id, async () => {
        const current = await this.byId(row.id);
        return (
          current && {
            formId: current.id,
            siteResourceName: site.metadata.name,
            siteSlug: site.spec.slug,
            formSlug: current.slug,
            name: current.name,
            active: current.isActive,
            notificationEmail: current.notificationEmail,
          }
        );
      });
    });
  }

  /** The Site resource of a site: the one named after its slug (how sites are created), else any. */
  private async siteResource(
    kube: Kube,
    clients: ReturnType<Kube['kubeClients']>,
    siteId: number,
    slug: string,
    resourceUid: string | null,
  ) {
    const controls = (site: { metadata: { uid?: string; annotations?: Record<string, string> } }) =>
      site.metadata.uid === resourceUid ||
      site.metadata.annotations?.[kube.SITE_ID_ANNOTATION] === String(siteId);
    const named = await clients.sites.get(slug);
    if (named && controls(named)) return named;
    return (await clients.sites.list()).find(controls);
  }

  private async attempt(
    row: FormRow,
    action: 'apply' | 'delete',
    work: (k: { kube: Kube; clients: ReturnType<Kube['kubeClients']> }) => Promise<void>,
  ): Promise<void> {
    try {
      this.kube ??= this.load();
      await work(await this.kube);
    } catch (err) {
      this.kube = undefined; // a client that failed to load is tried again on the next write
      this.target.logger.warn(
        { err, formId: row.id, action },
        'could not bring the Form resource in line; the controller resync will',
      );
    }
  }

  /** The Kubernetes client loads on the first form write (~0.4 s), not at every start. */
  private async load() {
    const kube = await import('../kube/index.js');
    const kubeConfig = this.target.kubeConfig ?? kube.kubeConfigFromEnvironment();
    const clients = kube.kubeClients(kubeConfig, this.target.namespace, 'hostplane-api', {
      requestTimeoutMs: this.target.requestTimeoutMs,
    });
    return { kube, clients };
  }
}
