/** Plan identifiers, stored on the account. */
export const planTypes = ['free', 'standard', 'premium', 'business', 'enterprise'] as const;
export type PlanType = (typeof planTypes)[number];

export interface Plan {
  type: PlanType;
  name: string;
  /** null = unlimited */
  maxFiles: number | null;
  maxStorageBytes: number | null;
  /** Forms per account. */
  maxForms: number;
  /** Form submissions per calendar month (UTC) across the account. */
  maxSubmissionsPerMonth: number;
  /** SQLite databases (null = unlimited). */
  maxSqliteDatabases: number | null;
  /** Size cap of one SQLite database (null = unlimited). */
  maxSqliteBytes: number | null;
  /** End users in one SQLite database's pool (null = unlimited). */
  maxSqliteUsers: number | null;
}

const GB = 1024 ** 3;
const MB = 1024 ** 2;

// The spec's section 8 tables (files and storage: the guide table); enterprise files, storage and
// SQLite are unlimited.
export const plans: Record<PlanType, Plan> = {
  free: {
    type: 'free',
    name: 'Free',
    maxFiles: 200,
    maxStorageBytes: 500 * MB,
    maxForms: 2,
    maxSubmissionsPerMonth: 100,
    maxSqliteDatabases: 1,
    maxSqliteBytes: 5 * MB,
    maxSqliteUsers: 3,
  },
  standard: {
    type: 'standard',
    name: 'Standard',
    maxFiles: 50_000,
    maxStorageBytes: 15 * GB,
    maxForms: 10,
    maxSubmissionsPerMonth: 2_000,
    maxSqliteDatabases: 5,
    maxSqliteBytes: 50 * MB,
    maxSqliteUsers: 25,
  },
  premium: {
    type: 'premium',
    name: 'Premium',
    maxFiles: 120_000,
    maxStorageBytes: 50 * GB,
    maxForms: 10,
    maxSubmissionsPerMonth: 5_000,
    maxSqliteDatabases: 20,
    maxSqliteBytes: 200 * MB,
    maxSqliteUsers: 250,
  },
  business: {
    type: 'business',
    name: 'Business',
    maxFiles: 450_000,
    maxStorageBytes: 200 * GB,
    maxForms: 50,
    maxSubmissionsPerMonth: 50_000,
    maxSqliteDatabases: 100,
    maxSqliteBytes: 1 * GB,
    maxSqliteUsers: 2_500,
  },
  enterprise: {
    type: 'enterprise',
    name: 'Enterprise',
    maxFiles: null,
    maxStorageBytes: null,
    maxForms: 50,
    maxSubmissionsPerMonth: 500_000,
    maxSqliteDatabases: null,
    maxSqliteBytes: null,
    maxSqliteUsers: null,
  },
};

export function planFor(type: string): Plan {
  return plans[type as PlanType] ?? plans.free;
}
