import type { Principal } from '../platform/index.js';

/**
 * What made a deploy, for the history's "who made each": `console` (a signed-in owner's browser
 * session, the console's folder drop), `cli` (`hostplane deploy`), `mcp` (the MCP tools, which call
 * the API in-process), `api` (any other client). The CLI and the MCP endpoint name themselves in
 * User-Agent (`hostplane-cli/<version>`, `hostplane-mcp/<version>`): informative, as any
 * User-Agent, not a credential; the console is known by its browser session, which no key has.
 */
export const DEPLOY_CLIENTS = ['console', 'cli', 'mcp', 'api'] as const;
export type DeployClient = (typeof DEPLOY_CLIENTS)[number];

const PRODUCTS: Record<string, DeployClient> = { 'hostplane-cli': 'cli', 'hostplane-mcp': 'mcp' };

export function deployClientOf(
  principal: Principal | undefined,
  userAgent: string | undefined,
): DeployClient {
  if (principal?.via === 'session' && principal.sessionKind === 'browser') return 'console';
  const product = /^([A-Za-z-]+)\//.exec(userAgent ?? '')?.[1]?.toLowerCase();
  return (product && PRODUCTS[product]) || 'api';
}
