// The parsed configuration's shape (Config and its parts), kept apart from the schema and from loadConfig.
import type { RawConfig } from './env-schema.js';
import type { LogFormatSetting } from './logging.js';
import type { RoutingConfig, SiteTlsConfig } from './site-routing.js';

export interface Config {
  port: number;
  host: string;
  metricsPort: number;
  /** The address /metrics listens on (default loopback). */
  metricsHost: string;
  baseUrl: string;
  sitesDomain: string;
  dataDir: string;
  databaseUrl: string | undefined;
  s3: { endpoint: string | undefined; bucket: string; region: string; forcePathStyle: boolean } | undefined;
  /** Express's `trust proxy` value: false, 'loopback', a hop count, or an IP/CIDR list. */
  trustProxy: false | string | number;
  logLevel: RawConfig['LOG_LEVEL'];
  /** How log lines are written: auto (pretty on a terminal, else JSON), json or pretty. */
  logFormat: LogFormatSetting;
  /** Notification mail: SMTP (none: logged, kept in the outbox), sender, retries. */
  mail: MailConfig;
  /** The account area: invite-only or open sign-up; custom domains proven by DNS or not at all. */
  accounts: {
    signup: 'invite' | 'open';
    domainVerification: 'dns' | 'off';
    maxSitesPerAccount: number;
    /** HOSTPLANE_PLANS_CONTACT: the plans page's way to ask for more (a URL or mailto:); unset: none. */
    plansContact: string | undefined;
  };
  /**
   * This process as a SQLite shard: its name, the URL other replicas reach it at (unset: its own
   * port on loopback), and the databases placement puts on one shard at most.
   */
  sqliteShard: { name: string; url: string | undefined; maxDatabases: number; failoverAfterMs: number };
  /** Litestream replication of the shard's databases (needs `s3` too). */
  sqliteReplication: SqliteReplicationConfig;
  /** Extensions the operator allows beyond the spec's list (lower case, no dot; checked by src/files). */
  extraFileTypes: string[];
  /** Ceiling on live temporary pages across the platform. */
  tempPages: { maxPages: number; maxBytes: number };
  /** The periodic recount of the sites' file counters (files/counters.ts): interval, sites per pass. */
  counterRecount: { everyMs: number; batch: number };
  /** How long an unfinished deploy may stay idle before the sweep deletes it (files/deploys.ts). */
  deployIdleMs: number;
  /**
   * The upload byte budget of one process (what the bodies in flight may cost in memory), and one
   * site's share of it (src/http/upload-admission.ts).
   */
  uploads: { maxBytes: number; maxSiteBytes: number };
  /** Deadlines of the request itself: headers, body progress, the whole request. */
  requests: RequestDeadlines;
  /** The edge's hot path: sampling of spans and access logs, cache memory, compression. */
  edge: EdgeConfig;
  /** How long a role that may not migrate waits for a current schema (see src/store/schema-gate.ts). */
  schemaWaitMs: number;
  /** Set in cluster mode (HOSTPLANE_KUBERNETES=true). */
  kubernetes: KubernetesConfig | undefined;
}

export interface SqliteReplicationConfig {
  mode: 'auto' | 'required' | 'off';
  /** The litestream binary: a path, or a name looked up on PATH. */
  litestreamBin: string;
  /** Replicas live under `<prefix>/<site id>/<path>/d<database id>/g<generation>/` in the S3 bucket. */
  prefix: string;
  /** How far back a point-in-time restore reaches (Litestream's snapshot retention). */
  retentionHours: number;
  /** Litestream's own Prometheus /metrics port (unset: not served). */
  metricsPort: number | undefined;
  /** …and its address: the process's metrics address (HOSTPLANE_METRICS_HOST). */
  metricsHost: string;
}

export interface RequestDeadlines {
  /** Node's headersTimeout: the request line and headers must arrive within it. */
  headersTimeoutMs: number;
  /** Node's requestTimeout: the whole request (headers and body) must arrive within it. */
  requestTimeoutMs: number;
  /** Each window of waiting for the body must bring `minBytesPerSecond` × the window (at least 1 byte). */
  body: { windowMs: number; minBytesPerSecond: number };
}

export interface EdgeConfig {
  /** Share (0-1) of site requests without a traceparent that get a span. */
  traceSampleRatio: number;
  /** Access log lines for site requests: none, a sampled share, or every one (5xx: always). */
  accessLog: 'off' | 'sampled' | 'all';
  accessLogSampleRatio: number;
  /** Memory for cached file bytes and precompressed variants. */
  cacheBytes: number;
  /** gzip/brotli variants of text files, computed once per blob. */
  compression: boolean;
  /** The on-disk cache of large blobs: its folder, and its bound (0: off). */
  diskCache: { dir: string; maxBytes: number };
  /**
   * How recently an edge must have heard back its own sync NOTIFY to answer from its caches, and how
   * long a deploy switch waits before returning. Undefined with PGlite (one process: no replicas).
   */
  syncWindowMs: number | undefined;
  /** An edge process's registration lease (ms), with PostgreSQL (see HOSTPLANE_EDGE_LEASE_MS). */
  leaseMs: number;
}

export interface MailConfig {
  smtpUrl: string | undefined;
  from: string;
  /** Sends tried before a mail is marked failed. */
  maxAttempts: number;
  /** First retry delay; doubled after each further failure (up to an hour). */
  retryBaseMs: number;
}

export interface KubernetesConfig {
  /** Namespace of the Site/Form/SqliteDatabase resources, their Ingresses and the controller's Lease. */
  namespace: string;
  /** Leader-election identity. */
  podName: string;
  ingressClass: string | undefined;
  edgeService: { name: string; port: number };
  /** Owner of sites adopted from a Site applied with kubectl and no `spec.owner`. */
  clusterOwnerEmail: string;
  leaseName: string;
  resyncMs: number;
  /** Deadline of one Kubernetes API call. */
  requestTimeoutMs: number;
  /** Site TLS; absent fields: none. */
  tls?: SiteTlsConfig;
  /** Default: an Ingress per Site. */
  routing?: RoutingConfig;
}
