// The composition root: the roles, start-up, app assembly, cross-domain wiring and the admin
// socket's server side. The CLI and the tests start the service through this face.
import type { Config } from '../config/index.js';
import type { RunningController, StartControllerOptions } from './controller.js';
import type { RunningServer, StartOptions } from './start.js';

export { ROLES, type AppRole, type Role } from './roles.js';
export type { RunningServer, Services, StartOptions } from './start.js';
export type { RunningController, StartControllerOptions } from './controller.js';
export {
  adminCommands,
  adminSecretPath,
  adminSocketPath,
  createSiteInput,
  sessionInput,
  type AdminCommands,
  type SiteCreatedHook,
} from './admin-socket.js';
export { clusterSiteHook } from './wiring.js';

// Start-up itself (start.ts, controller.ts) is loaded on the first call: `hostplane admin` and
// `hostplane migrate` never pay for it (~0.3 s).

/** Wires the services for a role and starts listening (see start.ts). */
export async function startServer(config: Config, options?: StartOptions): Promise<RunningServer> {
  return (await import('./start.js')).startServer(config, options);
}

/** The `controller` role (see controller.ts). */
export async function startController(
  config: Config,
  options?: StartControllerOptions,
): Promise<RunningController> {
  return (await import('./controller.js')).startController(config, options);
}
