import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import { configSchema } from './env-schema.js';
import { siteRouting } from './site-routing.js';
import type { Config } from './types.js';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new AppError('CONFIG_INVALID', { message: `invalid configuration:\n${lines.join('\n')}` });
  }
  const c = parsed.data;
  // Node refuses a headers deadline past the request deadline: say so at start, in these words.
  if (c.HOSTPLANE_HEADERS_TIMEOUT_SECONDS > c.HOSTPLANE_REQUEST_TIMEOUT_SECONDS)
    throw new AppError('CONFIG_INVALID', {
      message:
        'invalid configuration:\n  HOSTPLANE_HEADERS_TIMEOUT_SECONDS: must not exceed HOSTPLANE_REQUEST_TIMEOUT_SECONDS',
    });
  const baseUrl = new URL(c.HOSTPLANE_BASE_URL);
  return {
    port: c.PORT,
    host: c.HOST,
    metricsPort: c.HOSTPLANE_METRICS_PORT,
    metricsHost: c.HOSTPLANE_METRICS_HOST,
    baseUrl: baseUrl.origin,
    sitesDomain: c.HOSTPLANE_SITES_DOMAIN.toLowerCase(),
    dataDir: path.resolve(c.HOSTPLANE_DATA_DIR),
    sqliteShard: {
      name: c.HOSTPLANE_SQLITE_SHARD_NAME ?? os.hostname(),
      url: c.HOSTPLANE_SQLITE_SHARD_URL?.replace(/\/+$/, ''),
      maxDatabases: c.HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD,
      failoverAfterMs: c.HOSTPLANE_SQLITE_FAILOVER_AFTER_MS,
    },
    sqliteReplication: {
      mode: c.HOSTPLANE_SQLITE_REPLICATION,
      litestreamBin: c.HOSTPLANE_LITESTREAM_BIN ?? 'litestream',
      prefix: c.HOSTPLANE_SQLITE_REPLICA_PREFIX,
      retentionHours: c.HOSTPLANE_SQLITE_RETENTION_HOURS,
      metricsPort: c.HOSTPLANE_LITESTREAM_METRICS_PORT,
      metricsHost: c.HOSTPLANE_METRICS_HOST,
    },
    databaseUrl: c.DATABASE_URL || undefined,
    s3: c.S3_BUCKET
      ? {
          endpoint: c.S3_ENDPOINT || undefined,
          bucket: c.S3_BUCKET,
          region: c.S3_REGION,
          forcePathStyle: c.S3_FORCE_PATH_STYLE,
        }
      : undefined,
    trustProxy:
      c.HOSTPLANE_TRUST_PROXY === 'off'
        ? false
        : /^\d+$/.test(c.HOSTPLANE_TRUST_PROXY)
          ? Number(c.HOSTPLANE_TRUST_PROXY)
          : c.HOSTPLANE_TRUST_PROXY,
    logLevel: c.LOG_LEVEL,
    logFormat: c.HOSTPLANE_LOG_FORMAT,
    accounts: {
      signup: c.HOSTPLANE_SIGNUP,
      domainVerification: c.HOSTPLANE_DOMAIN_VERIFICATION,
      maxSitesPerAccount: c.HOSTPLANE_MAX_SITES_PER_ACCOUNT,
      plansContact: c.HOSTPLANE_PLANS_CONTACT || undefined,
    },
    mail: {
      smtpUrl: c.SMTP_URL || undefined,
      from: c.MAIL_FROM || `Hostplane <noreply@${baseUrl.hostname}>`,
      maxAttempts: c.HOSTPLANE_MAIL_MAX_ATTEMPTS,
      retryBaseMs: c.HOSTPLANE_MAIL_RETRY_SECONDS * 1000,
    },
    extraFileTypes: c.HOSTPLANE_EXTRA_FILE_TYPES,
    tempPages: {
      maxPages: c.HOSTPLANE_TEMP_PAGES_MAX,
      maxBytes: c.HOSTPLANE_TEMP_PAGES_MAX_MB * 1024 * 1024,
    },
    deployIdleMs: c.HOSTPLANE_DEPLOY_IDLE_SECONDS * 1000,
    counterRecount: {
      everyMs: c.HOSTPLANE_COUNTER_RECOUNT_SECONDS * 1000,
      batch: c.HOSTPLANE_COUNTER_RECOUNT_BATCH,
    },
    uploads: {
      maxBytes: c.HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB * 1024 * 1024,
      maxSiteBytes:
        Math.min(
          c.HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB ?? Math.max(1, c.HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB / 4),
          c.HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB,
        ) *
        1024 *
        1024,
    },
    requests: {
      headersTimeoutMs: c.HOSTPLANE_HEADERS_TIMEOUT_SECONDS * 1000,
      requestTimeoutMs: c.HOSTPLANE_REQUEST_TIMEOUT_SECONDS * 1000,
      body: {
        windowMs: c.HOSTPLANE_BODY_TIMEOUT_SECONDS * 1000,
        minBytesPerSecond: c.HOSTPLANE_BODY_MIN_RATE,
      },
    },
    edge: {
      traceSampleRatio: c.HOSTPLANE_EDGE_TRACE_SAMPLE_RATIO,
      accessLog: c.HOSTPLANE_EDGE_ACCESS_LOG,
      accessLogSampleRatio: c.HOSTPLANE_EDGE_ACCESS_LOG_SAMPLE_RATIO,
      cacheBytes: c.HOSTPLANE_EDGE_CACHE_MB * 1024 * 1024,
      compression: c.HOSTPLANE_EDGE_COMPRESSION,
      diskCache: {
        dir: path.resolve(c.HOSTPLANE_EDGE_DISK_CACHE_DIR ?? path.join(c.HOSTPLANE_DATA_DIR, 'edge-cache')),
        maxBytes: c.HOSTPLANE_EDGE_DISK_CACHE_MB * 1024 * 1024,
      },
      syncWindowMs: c.DATABASE_URL ? c.HOSTPLANE_EDGE_SYNC_MS : undefined,
      leaseMs: c.HOSTPLANE_EDGE_LEASE_MS,
    },
    schemaWaitMs: c.HOSTPLANE_SCHEMA_WAIT_SECONDS * 1000,
    kubernetes: c.HOSTPLANE_KUBERNETES
      ? {
          namespace: c.HOSTPLANE_NAMESPACE ?? inClusterNamespace() ?? 'default',
          podName: c.HOSTPLANE_POD_NAME || os.hostname(),
          ingressClass: c.HOSTPLANE_INGRESS_CLASS || undefined,
          edgeService: { name: c.HOSTPLANE_EDGE_SERVICE, port: c.HOSTPLANE_EDGE_SERVICE_PORT },
          clusterOwnerEmail:
            c.HOSTPLANE_CLUSTER_OWNER_EMAIL ?? `admin@${c.HOSTPLANE_SITES_DOMAIN.toLowerCase()}`,
          leaseName: c.HOSTPLANE_LEASE_NAME,
          resyncMs: c.HOSTPLANE_RESYNC_SECONDS * 1000,
          requestTimeoutMs: c.HOSTPLANE_KUBE_REQUEST_TIMEOUT_SECONDS * 1000,
          ...siteRouting(c, c.HOSTPLANE_NAMESPACE ?? inClusterNamespace() ?? 'default'),
        }
      : undefined,
  };
}

/** The namespace a pod runs in, from its service-account mount. */
function inClusterNamespace(): string | undefined {
  try {
    return (
      readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/** The public address of a site: `<scheme>://<slug>.<sites domain>[:port]`, port taken from the base URL. */
export function siteUrl(config: Pick<Config, 'baseUrl' | 'sitesDomain'>, slug: string): string {
  const base = new URL(config.baseUrl);
  const port = base.port ? `:${base.port}` : '';
  return `${base.protocol}//${slug}.${config.sitesDomain}${port}`;
}
