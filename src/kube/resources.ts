import { z } from 'zod';

/**
 * The custom resources of group hostplane.dev/v1alpha1. These zod schemas are the single source:
 * the TypeScript types below are inferred from them, and `crds.ts` generates the
 * CustomResourceDefinitions (crds/ and charts/hostplane/files/crds/) from them, so the two cannot drift
 * (a test fails when the committed YAML differs from what the schemas generate).
 */
export const GROUP = 'hostplane.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

// Kubernetes' structural-schema extensions, attached with .meta() and copied into the CRD.
const listSet = { 'x-kubernetes-list-type': 'set' } as const;

/**
 * A site slug: one DNS label without `--` (same rule as the API's, src/platform/slug.ts: `--` is
 * reserved for preview hosts). No lookahead: the apiserver checks the pattern with Go's RE2.
 */
export const slugSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/)
  .meta({
    description:
      'DNS label: lower-case letters, digits and hyphens, not starting or ending with a hyphen, never two hyphens in a row (`--` is reserved for preview hosts).',
  });

/** A fully qualified, lower-case host name with at least two labels (no wildcards, no trailing dot). */
export const hostnameSchema = z
  .string()
  .min(3)
  .max(253)
  .regex(/^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/)
  .meta({ description: 'A lower-case DNS name such as www.example.com.' });

const objectNameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);

const localObjectReference = z
  .object({ name: objectNameSchema.meta({ description: 'Name of a Site in the same namespace.' }) })
  .strict();

const planSchema = z.enum(['free', 'standard', 'premium', 'business', 'enterprise']);

/** The standard Kubernetes condition (metav1.Condition). */
export const conditionSchema = z
  .object({
    type: z.string().min(1).max(316),
    status: z.enum(['True', 'False', 'Unknown']),
    observedGeneration: z.int().min(0).optional(),
    lastTransitionTime: z.string().meta({ format: 'date-time' }),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
    message: z.string().max(32768),
  })
  .strict();
export type Condition = z.infer<typeof conditionSchema>;

const conditionsSchema = z.array(conditionSchema).meta({
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

/** What every status starts with: the generation it describes and its conditions. */
const statusBase = {
  observedGeneration: z.int().min(0).optional(),
  conditions: conditionsSchema.optional(),
};

const emailSchema = z
  .string()
  .min(3)
  .max(254)
  .regex(/^[^@\s]+@[^@\s]+$/);

// ---- Site -----------------------------------------------------------------------------------

export const siteSpecSchema = z
  .object({
    slug: slugSchema.meta({ description: 'The site is served at <slug>.<sites domain>.' }),
    customDomains: z
      .array(hostnameSchema)
      .max(50)
      .optional()
      .meta({ ...listSet, description: 'Extra host names the site is served on.' }),
    tls: z
      .object({
        issuerName: objectNameSchema.meta({ description: 'cert-manager issuer that signs the certificate.' }),
        issuerKind: z.enum(['ClusterIssuer', 'Issuer']).default('ClusterIssuer'),
      })
      .strict()
      .optional()
      .meta({
        description:
          "The cert-manager issuer of this Site's custom-domain Certificates, overriding the controller's (HOSTPLANE_TLS_ISSUER_NAME); omit to use that one.",
      }),
    deletionPolicy: z.enum(['Retain', 'Delete']).default('Retain').meta({
      description:
        'Retain: deleting the Site removes routing only and keeps files, forms and databases. Delete: removes them too.',
    }),
    owner: z
      .object({
        email: emailSchema,
        plan: planSchema.default('free'),
      })
      .strict()
      .optional()
      .meta({
        description:
          'Account that owns a site adopted from this resource (default: the configured cluster owner). Ignored once the site exists.',
      }),
  })
  .strict();

/** A host's cert-manager Certificate, as its Ready (and Issuing) conditions tell. */
export const certificateStatusSchema = z
  .object({
    state: z.enum(['Ready', 'Pending', 'Failed']).meta({
      description:
        'Ready: issued and valid. Pending: being issued. Failed: the last issuance failed (retried).',
    }),
    name: z.string().meta({ description: 'The cert-manager Certificate (owned by the Site).' }),
    secretName: z.string().meta({ description: 'The kubernetes.io/tls Secret it fills.' }),
    reason: z.string().optional().meta({ description: "cert-manager's reason, when not Ready." }),
    message: z.string().optional().meta({ description: "cert-manager's message, when not Ready." }),
    notAfter: z.string().optional().meta({ format: 'date-time' }),
  })
  .strict();

export const domainStatusSchema = z
  .object({
    hostname: z.string(),
    ready: z.boolean(),
    reason: z.string().optional(),
    message: z.string().optional(),
    certificate: certificateStatusSchema.optional(),
  })
  .strict();

export const siteStatusSchema = z
  .object({
    ...statusBase,
    siteId: z.int().min(1).optional().meta({ description: 'The site in the control-plane database.' }),
    url: z.string().optional(),
    ingressName: z.string().optional(),
    httpRouteName: z
      .string()
      .optional()
      .meta({ description: 'The HTTPRoute of the Site (HOSTPLANE_ROUTING_MODE=gateway).' }),
    apiKeySecretName: z
      .string()
      .optional()
      .meta({ description: 'Secret holding the first API key of a site adopted from this resource.' }),
    certificate: certificateStatusSchema.optional().meta({
      description:
        "The slug host's own Certificate: only without a wildcard Secret (HOSTPLANE_TLS_WILDCARD_SECRET) and with an issuer.",
    }),
    domains: z
      .array(domainStatusSchema)
      .optional()
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['hostname'] }),
  })
  .strict();

export type SiteSpec = z.output<typeof siteSpecSchema>;
export type SiteStatus = z.output<typeof siteStatusSchema>;
export type DomainStatus = z.output<typeof domainStatusSchema>;
export type CertificateStatus = z.output<typeof certificateStatusSchema>;

// ---- Form -----------------------------------------------------------------------------------

export const formSpecSchema = z
  .object({
    // A form belongs to one site for life: its submissions, quota and URL are that site's.
    siteRef: localObjectReference.meta({
      'x-kubernetes-validations': [
        { rule: 'self == oldSelf', message: 'siteRef is immutable: a form cannot move to another Site' },
      ],
    }),
    name: z.string().min(1).max(120).meta({ description: 'Display name of the form.' }),
    active: z.boolean().default(true).meta({ description: 'An inactive form refuses new submissions.' }),
    notificationEmail: emailSchema
      .optional()
      .meta({ description: 'Where submissions are mailed (default: the account email).' }),
  })
  .strict();

export const formStatusSchema = z
  .object({
    ...statusBase,
    formId: z.int().min(1).optional().meta({ description: 'The form in the control-plane database.' }),
    uuid: z.string().optional().meta({ description: 'The public identifier in the submission URL.' }),
    submissionUrl: z.string().optional().meta({ description: 'Where the embed snippets post to.' }),
    submissionCount: z
      .int()
      .min(0)
      .optional()
      .meta({ description: 'Stored submissions, spam included (refreshed by every resync).' }),
    spamCount: z.int().min(0).optional().meta({ description: 'Stored submissions in the spam bin.' }),
  })
  .strict();

export type FormSpec = z.output<typeof formSpecSchema>;
export type FormStatus = z.output<typeof formStatusSchema>;

// ---- SqliteDatabase -------------------------------------------------------------------------

export const sqliteDatabaseSpecSchema = z
  .object({
    // A database belongs to one site and one path for life: its replica is keyed by both.
    siteRef: localObjectReference.meta({
      'x-kubernetes-validations': [
        { rule: 'self == oldSelf', message: 'siteRef is immutable: a database cannot move to another Site' },
      ],
    }),
    path: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[^/\\\0][^\\\0]*\.(sqlite|db)$/)
      .meta({
        description: 'Database path within the site, relative to its root; ends in .sqlite or .db.',
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'path is immutable' }],
      }),
    shard: z.string().max(253).optional().meta({
      description:
        'Pin a new database to this sqlite shard (its pod name). Default: placed on the shard with the fewest databases.',
    }),
    maxSizeBytes: z
      .int()
      .min(0)
      .optional()
      .meta({ description: "Size cap; at most the plan's (default: the plan's cap)." }),
    maxUsers: z
      .int()
      .min(0)
      .optional()
      .meta({ description: "End-user cap; at most the plan's (default: the plan's cap)." }),
    replication: z
      .object({ enabled: z.boolean().default(true) })
      .strict()
      .default({ enabled: true })
      .meta({
        description:
          'Litestream replication to S3. Retention is per shard (HOSTPLANE_SQLITE_RETENTION_HOURS); the status reports the one in effect.',
      }),
    deletionPolicy: z.enum(['Delete', 'Retain']).default('Delete').meta({
      description:
        'Delete: deleting the resource removes the database (file, tokens, user pool) and its replica in S3. Retain: the same, but the replica stays in S3 (restorable by an operator).',
    }),
  })
  .strict();

const restoreWindowSchema = z
  .object({
    earliest: z.string().optional().meta({ format: 'date-time' }),
    latest: z.string().optional().meta({ format: 'date-time' }),
  })
  .strict()
  .meta({ description: 'The times a point-in-time restore can reach.' });

const lastMoveSchema = z
  .object({
    from: z.string().meta({ description: 'The shard it was on.' }),
    to: z.string().meta({ description: 'The shard it was placed on.' }),
    reason: z.enum(['failover', 'drain', 'pin']).meta({
      description:
        'failover: its shard was lost; drain: `hostplane admin drain-shard`; pin: spec.shard changed.',
    }),
    at: z.string().meta({ format: 'date-time' }),
  })
  .strict()
  .meta({ description: 'The last time the database moved to another shard.' });

export const sqliteDatabaseStatusSchema = z
  .object({
    ...statusBase,
    databaseId: z
      .int()
      .min(1)
      .optional()
      .meta({ description: 'The database in the control-plane database.' }),
    siteId: z.int().min(1).optional().meta({ description: 'The site the database belongs to.' }),
    shard: z.string().optional().meta({ description: 'The shard the database is placed on.' }),
    sizeBytes: z.int().min(0).optional().meta({ description: 'Size the owning shard last reported.' }),
    version: z.int().min(0).optional().meta({ description: 'The database version (bumped by every write).' }),
    users: z.int().min(0).optional().meta({ description: 'End users in its pool.' }),
    maxSizeBytes: z.int().min(0).optional().meta({ description: 'Size cap in effect (absent: none).' }),
    maxUsers: z.int().min(0).optional().meta({ description: 'End-user cap in effect (absent: none).' }),
    replicationState: z.string().optional().meta({
      description: 'pending, replicating, off, restoring, restore_failed or register_failed.',
    }),
    lastReplicatedAt: z
      .string()
      .optional()
      .meta({ format: 'date-time', description: 'When Litestream last reported the replica in step.' }),
    retentionHours: z
      .int()
      .min(0)
      .optional()
      .meta({ description: 'Snapshot retention in effect (per shard, not per database).' }),
    restoreWindow: restoreWindowSchema.optional(),
    lastMove: lastMoveSchema.optional(),
    tokenId: z
      .int()
      .min(1)
      .optional()
      .meta({ description: 'The readwrite token minted for a database created from this resource.' }),
    tokenSecretName: z
      .string()
      .optional()
      .meta({ description: 'Secret holding that token (key `token`); the status never carries it.' }),
  })
  .strict();

export type SqliteDatabaseSpec = z.output<typeof sqliteDatabaseSpecSchema>;
export type SqliteDatabaseStatus = z.output<typeof sqliteDatabaseStatusSchema>;
