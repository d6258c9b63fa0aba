import type { Config } from '../config/index.js';
import type { DomainModule } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import { publishRoutes } from './routes.js';
import type { PublishService } from './service.js';

// The publish domain's public face: temporary pages published without a credential.
export { PublishService, MAX_TEMP_HTML_BYTES, TEMP_PAGE_TTL_MS } from './service.js';
export { PUBLISH_RATE_LIMIT } from './routes.js';

/** Temporary publishing as a module of the app: its routes and the expired-pages sweep. */
export function publishModule(deps: {
  config: Config;
  publish: PublishService;
  limiter: RateLimiter;
  logger: Logger;
}): DomainModule {
  return {
    name: 'publish',
    routes: (registry) => publishRoutes({ ...deps, registry }),
    sweeps: [{ name: 'temp_pages', everyMs: 60_000, run: () => deps.publish.sweepExpired() }],
  };
}
