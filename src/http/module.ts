import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler, Router } from 'express';
import type { PlatformAuthKind, RouteRegistry } from './route.js';

/**
 * What a domain hands the app: its routes (registered through the registry, so they validate
 * and document themselves) and its background sweeps. The app is assembled from a list of these.
 */
export interface DomainModule {
  name: string;
  routes?(registry: RouteRegistry): Router;
  sweeps?: Sweep[];
}

/**
 * Serves some requests straight from node:http, ahead of Express (built from the routes
 * registered with `raw`, see raw-dispatch.ts). Returns false to leave the
 * request to Express; after returning true it answers the request itself, or hands it on by
 * calling `toExpress` (which it may do later, as long as it has not read the body).
 */
export type FastPath = (req: IncomingMessage, res: ServerResponse, toExpress: () => void) => boolean;

/** A periodic, idempotent duty (several API replicas may run it at once). */
export interface Sweep {
  name: string;
  everyMs: number;
  /** The first run, when sooner than `everyMs` after start. */
  firstAfterMs?: number;
  /** Returns how many things it removed, for the log. */
  run(): Promise<number>;
}

/** The credential checks each route's `auth` names; provided by the platform domain. */
export type Authenticators = Record<PlatformAuthKind, RequestHandler[]>;
