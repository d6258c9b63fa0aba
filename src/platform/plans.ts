/** Plan identifiers, stored on the account. */
export const planTypes = ['free', 'standard', 'premium', 'business', 'enterprise'] as const;
export type PlanType = (typeof planTypes)[number];

export interface Plan {
  type: PlanType;
  name: string;
  /** null = unlimited */
  maxFiles: number | null;
  maxStorageBytes: number | null;
}

const GB = 1024 ** 3;
const MB = 1024 ** 2;

// The spec's guide table; enterprise is unlimited.
export const plans: Record<PlanType, Plan> = {
  free: { type: 'free', name: 'Free', maxFiles: 200, maxStorageBytes: 500 * MB },
  standard: { type: 'standard', name: 'Standard', maxFiles: 50_000, maxStorageBytes: 15 * GB },
  premium: { type: 'premium', name: 'Premium', maxFiles: 120_000, maxStorageBytes: 50 * GB },
  business: { type: 'business', name: 'Business', maxFiles: 450_000, maxStorageBytes: 200 * GB },
  enterprise: { type: 'enterprise', name: 'Enterprise', maxFiles: null, maxStorageBytes: null },
};

export function planFor(type: string): Plan {
  return plans[type as PlanType] ?? plans.free;
}
