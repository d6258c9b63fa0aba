import type { DomainModule } from '../http/index.js';
import { mcpRoutes, type McpDeps } from './routes.js';

// The agents' face of the service: the MCP server at /mcp (its tools call the public API
// in-process, see api.ts) and /llms.txt. It knows no domain: everything goes through the API.
export { MAX_MCP_BODY_BYTES, type McpDeps } from './routes.js';
export { FEATURES, type Feature } from './tool.js';

/** /mcp and /llms.txt as a module of the app (roles all and api). */
export function mcpModule(deps: McpDeps): DomainModule {
  return { name: 'mcp', routes: (registry) => mcpRoutes({ ...deps, registry }) };
}
