import type { RawGate } from '../http/index.js';
import { admitScoped, admitScopedNow, carryGrant } from './access.js';
import type { Grant, TokenGrants } from './grants.js';
import type { ShardProxy } from './proxy.js';

/**
 * How a call with a scoped token is admitted on the fast path (the CRUD routes declare it with
 * `raw`): the same admission as their Express routes (token, Origin, CORS), refusals answered
 * there; a database another shard owns, or not placed yet, goes to the proxy with its grant.
 */
export function scopedGate(deps: { grants: TokenGrants; proxy: ShardProxy }): RawGate<Grant> {
  const { grants, proxy } = deps;
  return {
    admit: (req, res) => admitScopedNow(grants, req, res) ?? admitScoped(grants, req, res),
    sendOn: (req, res, grant) => proxy.sendOn(req, res, grant),
    carry: carryGrant,
  };
}
