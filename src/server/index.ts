// The composition root: the roles, start-up, app assembly, cross-domain wiring and the admin
// socket's server side. The CLI and the tests start the service through this face.
import type { Config } from '../config/index.js';
import type { RunningController, StartControllerOptions } from './controller.js';
import type { RunningServer, StartOptions } from './start.js';
import type { AdminCommand, AdminInput } from './admin-socket.js';

export { ROLES, type AppRole, type Role } from './roles.js';
export type { RunningServer, Services, StartOptions } from './start.js';
export type { RunningController, StartControllerOptions } from './controller.js';
export {
  adminSecretPath,
  adminSocketPath,
  createSiteInput,
  drainShardInput,
  inviteInput,
  sessionInput,
  type AdminCommand,
  type AdminInput,
  type AdminCommands,
  type SiteCreatedHook,
} from './admin-socket.js';

// Start-up itself (start.ts, controller.ts) and the local admin run are loaded on the first call:
// `hostplane admin` and `hostplane migrate` never pay for the whole server (~0.3 s).

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

/** An admin command run in this process, when no server holds the data dir (see admin-local.ts). */
export async function runAdminLocally<C extends AdminCommand>(
  config: Config,
  command: C,
  input: AdminInput<C>,
): Promise<Record<string, unknown>> {
  return (await import('./admin-local.js')).runAdminLocally(config, command, input);
}
