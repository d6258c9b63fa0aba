// Resource objects' shape and each kind's CRD facts (names, columns); the zod schemas live in resources.ts.
import type { z } from 'zod';
import {
  formSpecSchema,
  formStatusSchema,
  siteSpecSchema,
  siteStatusSchema,
  sqliteDatabaseSpecSchema,
  sqliteDatabaseStatusSchema,
  type FormSpec,
  type FormStatus,
  type SiteSpec,
  type SiteStatus,
  type SqliteDatabaseSpec,
  type SqliteDatabaseStatus,
} from './resources.js';

/** The metadata fields the controllers read and write (a subset of metav1.ObjectMeta). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  /** Set by the API server (RFC 3339 in JSON); orders resources that claim the same thing. */
  creationTimestamp?: Date | string;
  // client-node types timestamps as Date; objects straight from JSON carry strings. Only the
  // presence of deletionTimestamp is read.
  deletionTimestamp?: Date;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface CustomResource<Spec, Status> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type SiteResource = CustomResource<SiteSpec, SiteStatus>;
export type FormResource = CustomResource<FormSpec, FormStatus>;
export type SqliteDatabaseResource = CustomResource<SqliteDatabaseSpec, SqliteDatabaseStatus>;

export interface ResourceKind {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  spec: z.ZodType;
  status: z.ZodType;
  description: string;
  printerColumns: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
}

const readyColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
};
const ageColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const siteKind: ResourceKind = {
  kind: 'Site',
  plural: 'sites',
  singular: 'site',
  shortNames: ['hsite'],
  spec: siteSpecSchema,
  status: siteStatusSchema,
  description: 'A static site served at <slug>.<sites domain> and on its custom domains.',
  printerColumns: [
    { name: 'Slug', type: 'string', jsonPath: '.spec.slug' },
    { name: 'URL', type: 'string', jsonPath: '.status.url' },
    readyColumn,
    { name: 'Policy', type: 'string', jsonPath: '.spec.deletionPolicy', priority: 1 },
    { name: 'Domains', type: 'string', jsonPath: '.spec.customDomains', priority: 1 },
    ageColumn,
  ],
};

export const formKind: ResourceKind = {
  kind: 'Form',
  plural: 'forms',
  singular: 'form',
  shortNames: ['hform'],
  spec: formSpecSchema,
  status: formStatusSchema,
  description: 'An embeddable form of a Site; deleting it purges its submissions.',
  printerColumns: [
    { name: 'Site', type: 'string', jsonPath: '.spec.siteRef.name' },
    { name: 'Active', type: 'boolean', jsonPath: '.spec.active' },
    { name: 'Submissions', type: 'integer', jsonPath: '.status.submissionCount' },
    readyColumn,
    { name: 'URL', type: 'string', jsonPath: '.status.submissionUrl', priority: 1 },
    ageColumn,
  ],
};

export const sqliteDatabaseKind: ResourceKind = {
  kind: 'SqliteDatabase',
  plural: 'sqlitedatabases',
  singular: 'sqlitedatabase',
  shortNames: ['sqldb'],
  spec: sqliteDatabaseSpecSchema,
  status: sqliteDatabaseStatusSchema,
  description: "A site's SQLite database: its shard placement, caps and Litestream replication.",
  printerColumns: [
    { name: 'Site', type: 'string', jsonPath: '.spec.siteRef.name' },
    { name: 'Path', type: 'string', jsonPath: '.spec.path' },
    { name: 'Shard', type: 'string', jsonPath: '.status.shard' },
    { name: 'Size', type: 'integer', jsonPath: '.status.sizeBytes' },
    { name: 'Version', type: 'integer', jsonPath: '.status.version' },
    { name: 'Replicated', type: 'date', jsonPath: '.status.lastReplicatedAt' },
    readyColumn,
    { name: 'Policy', type: 'string', jsonPath: '.spec.deletionPolicy', priority: 1 },
    ageColumn,
  ],
};

export const resourceKinds = [siteKind, formKind, sqliteDatabaseKind] as const;
