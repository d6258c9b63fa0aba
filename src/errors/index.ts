// The errors every layer throws: the registry of codes (registry.ts, definitions by group in codes/)
// and how an unreachable dependency becomes one of them (outage.ts).
export * from './registry.js';
export { outageError, unreachableDependency, OUTAGE_RETRY_AFTER_SECONDS, type Dependency } from './outage.js';
