// The environment variables as one zod schema (meaning, bounds, defaults); loadConfig maps them to Config.
import { z } from 'zod';
import { logFormatSchema } from './logging.js';

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Every setting Hostplane reads from the environment, parsed once at start-up. */
export const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  // /metrics answers on this port only (0: any free port), never on PORT.
  HOSTPLANE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9090),
  // …and on this address: /metrics has no credential, so loopback unless the operator opens it
  // (the chart: 0.0.0.0, for Prometheus, behind its NetworkPolicy).
  HOSTPLANE_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  HOSTPLANE_BASE_URL: z.url().default('http://localhost:8080'),
  HOSTPLANE_SITES_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/i, 'must be a DNS name such as sites.example.com')
    .default('localhost'),
  HOSTPLANE_DATA_DIR: z.string().default('./data'),
  DATABASE_URL: z.string().optional(),
  S3_ENDPOINT: z.string().optional(),
  S3_BUCKET: z.string().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_FORCE_PATH_STYLE: booleanFromEnv.default(false),
  // off | loopback | a number of proxy hops | a comma-separated list of IPs/CIDRs (Express syntax).
  HOSTPLANE_TRUST_PROXY: z
    .string()
    .regex(
      /^(off|loopback|\d{1,2}|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$/,
      'must be off, loopback, a hop count or IP/CIDR list',
    )
    .default('off'),
  // How long api, edge and controller wait for `hostplane migrate` before exiting (0: do not wait).
  HOSTPLANE_SCHEMA_WAIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  // Platform-wide ceiling on live anonymous temporary pages (count and megabytes of HTML).
  HOSTPLANE_TEMP_PAGES_MAX: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  HOSTPLANE_TEMP_PAGES_MAX_MB: z.coerce.number().int().min(1).max(1_048_576).default(1024),
  // How often each api replica recounts the file counters of a batch of sites (the oldest checked),
  // and how many sites a pass takes: counters a previous release's replicas left wrong heal.
  HOSTPLANE_COUNTER_RECOUNT_SECONDS: z.coerce.number().min(1).max(86_400).default(60),
  HOSTPLANE_COUNTER_RECOUNT_BATCH: z.coerce.number().int().min(1).max(10_000).default(50),
  // An unfinished deploy (uploading, ready) with no create or blob upload for this long is deleted
  // by the api replicas' sweep (its blobs go to the orphan sweep); the sweep runs every quarter of it, at most every minute.
  HOSTPLANE_DEPLOY_IDLE_SECONDS: z.coerce.number().int().min(1).max(604_800).default(900),
  // Uploads (files, videos, deploy blobs, /mcp bodies over 1 MiB) are admitted by what their bodies
  // may cost in memory (about twice a large JSON upload's Content-Length, at most 16 MiB for a
  // streamed video), before the body is read: beyond the process's budget 503, beyond one site's
  // share of it 429, both with Retry-After. A memory bound, so per process.
  HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: z.coerce.number().int().min(1).max(1_048_576).default(128),
  // Unset: a quarter of the budget, so one site's large uploads leave three quarters to the others.
  HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().int().min(1).max(1_048_576).optional(),
  ),
  // Request bodies (every reader: uploads, videos, JSON, forms): while the server waits for the
  // body, each window of this many seconds must bring at least MIN_RATE bytes a second (and at
  // least one byte); else 408 and the connection is closed. Headers and whole requests have
  // Node's deadlines, set here.
  HOSTPLANE_BODY_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(3600).default(20),
  HOSTPLANE_BODY_MIN_RATE: z.coerce.number().int().min(0).max(1_073_741_824).default(1024),
  HOSTPLANE_HEADERS_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(3600).default(20),
  HOSTPLANE_REQUEST_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(86_400).default(300),
  // The account area: how accounts come to be, and how a custom domain's ownership is proven.
  HOSTPLANE_SIGNUP: z.enum(['invite', 'open']).default('invite'),
  HOSTPLANE_DOMAIN_VERIFICATION: z.enum(['dns', 'off']).default('dns'),
  // Sites an owner can create from the account API (the operator's `admin create-site` is not counted against it).
  HOSTPLANE_MAX_SITES_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(100),
  // File types beyond the spec's list (src/files/file-types.ts checks each is one it can serve):
  // extensions separated by commas or spaces, `map,mjs,webmanifest,wasm` (a leading dot is dropped).
  HOSTPLANE_EXTRA_FILE_TYPES: z
    .string()
    .regex(
      /^\s*(?:\.?[A-Za-z0-9]{1,16}(?:\s*,\s*|\s+|\s*$))*$/,
      'must be file extensions separated by commas, such as map,mjs,webmanifest,wasm',
    )
    .default('')
    .transform((v) => [
      ...new Set(
        v
          .split(/[\s,]+/)
          .filter(Boolean)
          .map((e) => e.replace(/^\./, '').toLowerCase()),
      ),
    ]),
  // Where the console's plans page sends an owner who wants a bigger plan: an http(s) URL or a mailto:.
  HOSTPLANE_PLANS_CONTACT: z
    .string()
    .max(2000)
    .regex(/^(https?:\/\/|mailto:)[^\s]+$/i, 'must be an http(s):// URL or a mailto: address')
    .optional()
    .or(z.literal('')),
  // Notification mail (src/mail): unset SMTP_URL keeps mail in the outbox and only logs it.
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/[^\s]+$/, 'must be an smtp:// or smtps:// URL')
    .optional()
    .or(z.literal('')),
  MAIL_FROM: z.string().max(320).optional(),
  HOSTPLANE_MAIL_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(8),
  HOSTPLANE_MAIL_RETRY_SECONDS: z.coerce.number().min(0.01).max(86_400).default(30),
  // SQLite shards (src/sqlite): this process's name among the shards and the URL other replicas
  // proxy to. Defaults: the host name, and http://127.0.0.1:<the port it listens on>.
  HOSTPLANE_SQLITE_SHARD_NAME: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/, 'must be a host-name-like string')
    .optional(),
  HOSTPLANE_SQLITE_SHARD_URL: z.url({ protocol: /^https?$/ }).optional(),
  // Litestream replication of a shard's databases to S3 (src/sqlite/replication): auto replicates
  // when S3 is configured and the binary is found, required refuses to start without them.
  HOSTPLANE_SQLITE_REPLICATION: z.enum(['auto', 'required', 'off']).default('auto'),
  HOSTPLANE_LITESTREAM_BIN: z.string().min(1).max(4096).optional(),
  HOSTPLANE_SQLITE_REPLICA_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'must be a key prefix like sqlite or a/b')
    .max(200)
    .default('sqlite'),
  HOSTPLANE_SQLITE_RETENTION_HOURS: z.coerce.number().int().min(1).max(8760).default(168),
  HOSTPLANE_LITESTREAM_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // Databases placed on one shard at most (one Litestream per shard runs out of threads with
  // thousands of databases, litestream#1469): a new database goes to a shard with room.
  HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD: z.coerce.number().int().min(1).max(1_000_000).default(500),
  // A shard gone this long (a stopped one from its stop, a silent one from its last heartbeat, at
  // least two missed heartbeats) has its databases placed on live shards and restored there, once
  // their leases ran out (src/sqlite/failover.ts); 0 turns the failover off.
  HOSTPLANE_SQLITE_FAILOVER_AFTER_MS: z.coerce.number().int().min(0).max(86_400_000).default(20_000),
  // The edge's hot path (src/edge): the share of site requests traced when the request carries no
  // trace (a request with a W3C traceparent follows its parent's decision), access log lines
  // (off | sampled | all; 5xx are always logged), the memory for cached file bytes and their
  // precompressed variants, and whether text files are offered gzip/brotli compressed.
  HOSTPLANE_EDGE_TRACE_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(0.01),
  HOSTPLANE_EDGE_ACCESS_LOG: z.enum(['off', 'sampled', 'all']).default('sampled'),
  HOSTPLANE_EDGE_ACCESS_LOG_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(0.01),
  HOSTPLANE_EDGE_CACHE_MB: z.coerce.number().int().min(1).max(1_048_576).default(64),
  HOSTPLANE_EDGE_COMPRESSION: booleanFromEnv.default(true),
  // Files over the in-memory blob cache's 1 MiB are kept on local disk once read from the blob store
  // (src/edge/disk-cache.ts): content-addressed files in this folder (default: <data dir>/edge-cache;
  // safe to share between edge processes), at most this many MB per process (0: off).
  HOSTPLANE_EDGE_DISK_CACHE_DIR: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().max(4096).optional(),
  ),
  HOSTPLANE_EDGE_DISK_CACHE_MB: z.coerce.number().int().min(0).max(16_777_216).default(1024),
  // With several replicas (PostgreSQL), an edge answers from its caches only while it has heard
  // back its own sync NOTIFY sent at most this long ago; a deploy switch (publish, restore) returns
  // after this long, so every replica serves the new version by then (src/edge/cache.ts).
  HOSTPLANE_EDGE_SYNC_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  // With PostgreSQL, each edge process registers with a lease of this long, renewed every quarter
  // of it; a switch waits for the acknowledgement of every process whose lease runs (one that
  // died without a goodbye is waited for until its lease ends: the switch then takes the window).
  HOSTPLANE_EDGE_LEASE_MS: z.coerce.number().int().min(200).max(600_000).default(5000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // auto | json | pretty (src/config/logging.ts): auto is readable on a terminal, JSON otherwise.
  HOSTPLANE_LOG_FORMAT: logFormatSchema,
  // Cluster mode: Site custom resources are applied and reconciled (see docs/operators/resources.md).
  HOSTPLANE_KUBERNETES: booleanFromEnv.default(false),
  HOSTPLANE_NAMESPACE: z.string().regex(dnsLabel, 'must be a namespace name').optional(),
  HOSTPLANE_POD_NAME: z.string().max(253).optional(),
  HOSTPLANE_INGRESS_CLASS: z.string().max(253).default(''),
  HOSTPLANE_EDGE_SERVICE: z.string().regex(dnsLabel, 'must be a Service name').default('hostplane-edge'),
  HOSTPLANE_EDGE_SERVICE_PORT: z.coerce.number().int().min(1).max(65535).default(80),
  HOSTPLANE_CLUSTER_OWNER_EMAIL: z.email().optional(),
  HOSTPLANE_LEASE_NAME: z.string().regex(dnsLabel, 'must be a Lease name').default('hostplane-controller'),
  HOSTPLANE_RESYNC_SECONDS: z.coerce.number().int().min(5).max(86_400).default(300),
  // Site TLS (controllers/site/certificates.ts): a cert-manager issuer for the custom domains'
  // Certificates ('' = none: no Certificates), and the operator's Secret for *.<sites domain>.
  HOSTPLANE_TLS_ISSUER_NAME: z.string().max(253).default(''),
  HOSTPLANE_TLS_ISSUER_KIND: z.enum(['ClusterIssuer', 'Issuer']).default('ClusterIssuer'),
  HOSTPLANE_TLS_WILDCARD_SECRET: z.string().max(253).default(''),
  // How sites reach the world: an Ingress per Site, or an HTTPRoute per Site on a Gateway.
  HOSTPLANE_ROUTING_MODE: z.enum(['ingress', 'gateway']).default('ingress'),
  HOSTPLANE_GATEWAY_NAME: z.string().max(253).default(''),
  HOSTPLANE_GATEWAY_NAMESPACE: z.string().max(63).default(''),
  HOSTPLANE_GATEWAY_SECTION: z.string().max(253).default(''),
  // The controller adds one HTTPS listener per custom domain to that Gateway (on this port).
  HOSTPLANE_GATEWAY_LISTENERS: booleanFromEnv.default(false),
  HOSTPLANE_GATEWAY_HTTPS_PORT: z.coerce.number().int().min(1).max(65535).default(443),
  // Deadline of one Kubernetes API call (watches excepted): a hung call cannot stall a reconcile.
  HOSTPLANE_KUBE_REQUEST_TIMEOUT_SECONDS: z.coerce.number().min(1).max(300).default(15),
});

export type RawConfig = z.infer<typeof configSchema>;
