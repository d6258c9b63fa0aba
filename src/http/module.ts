import type { RequestHandler, Router } from 'express';
import type { AuthKind, RouteRegistry } from './route.js';

/**
 * What a domain hands the app: its routes (registered through the registry, so they validate
 * and document themselves) and its background sweeps. The app is assembled from a list of these.
 */
export interface DomainModule {
  name: string;
  routes?(registry: RouteRegistry): Router;
  sweeps?: Sweep[];
}

/** A periodic, idempotent duty (several API replicas may run it at once). */
export interface Sweep {
  name: string;
  everyMs: number;
  /** Returns how many things it removed, for the log. */
  run(): Promise<number>;
}

/** The credential checks each route's `auth` names; provided by the platform domain. */
export type Authenticators = Record<AuthKind, RequestHandler[]>;
