import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../observability/index.js';
import type { Platform, Site } from '../platform/index.js';
import type { Db } from '../store/index.js';
import type { SqliteDatabaseRow } from './tables.js';
import { SqliteTokens, type InstallInput } from './tokens.js';

type Kube = typeof import('../kube/index.js');

export interface DatabaseResourceTarget {
  namespace: string;
  requestTimeoutMs: number;
  /** Default: the pod's service account (or $KUBECONFIG). */
  kubeConfig?: KubeConfig;
  logger: Logger;
}

/**
 * SqliteTokens in cluster mode: an install that creates a database commits to PostgreSQL first,
 * then creates the database's `SqliteDatabase` resource (annotated with its id, so the controller
 * links it rather than creating anything). A failed apply is logged, never the request's
 * failure: the controller's resync creates a missing resource. Installing more tokens for an
 * existing database changes nothing in the cluster.
 */
export class ClusterSqliteTokens extends SqliteTokens {
  private kube: Promise<{ kube: Kube; clients: ReturnType<Kube['kubeClients']> }> | undefined;

  constructor(
    db: Db,
    private readonly sitePlatform: Platform,
    private readonly target: DatabaseResourceTarget,
  ) {
    super(db, sitePlatform);
  }

  override async install(site: Site, input: InstallInput) {
    const installed = await super.install(site, input);
    if (installed.created) await this.applyResource(installed.database);
    return installed;
  }

  /** Creates the database's resource; skipped while its site has no Site resource. */
  private async applyResource(row: SqliteDatabaseRow): Promise<void> {
    try {
      this.kube ??= this.load();
      const { kube, clients } = await this.kube;
      const routing = await this.sitePlatform.siteRouting(row.siteId);
      if (!routing || routing.detached) return;
      const controls = (s: { metadata: { uid?: string; annotations?: Record<string, string> } }) =>
        s.metadata.uid === routing.resourceUid ||
        s.metadata.annotations?.[kube.SITE_ID_ANNOTATION] === String(row.siteId);
      const named = await clients.sites.get(routing.slug);
      const site = named && controls(named) ? named : (await clients.sites.list()).find(controls);
      if (!site) {
        this.target.logger.info(
          { databaseId: row.id, siteId: row.siteId },
          'the site has no Site resource yet; the controller resync will create the SqliteDatabase resource',
        );
        return;
      }
      if (await kube.findSqliteDatabaseResource(clients.sqliteDatabases, row.id)) return;
      await kube.createSqliteDatabaseResource(clients.sqliteDatabases, {
        databaseId: row.id,
        siteResourceName: site.metadata.name,
        siteSlug: site.spec.slug,
        path: row.path,
        replicationEnabled: row.replicationEnabled,
      });
    } catch (err) {
      this.kube = undefined; // a client that failed to load is tried again on the next install
      this.target.logger.warn(
        { err, databaseId: row.id },
        'could not create the SqliteDatabase resource; the controller resync will',
      );
    }
  }

  /** The Kubernetes client loads on the first database created (~0.4 s), not at every start. */
  private async load() {
    const kube = await import('../kube/index.js');
    const kubeConfig = this.target.kubeConfig ?? kube.kubeConfigFromEnvironment();
    const clients = kube.kubeClients(kubeConfig, this.target.namespace, 'hostplane-api', {
      requestTimeoutMs: this.target.requestTimeoutMs,
    });
    return { kube, clients };
  }
}
