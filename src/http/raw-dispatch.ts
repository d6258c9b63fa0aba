import type { Logger } from '../observability/index.js';
import type { FastPath } from './module.js';
import { plainJsonBody, rawRoute, readJsonBody } from './raw.js';
import { parseOrThrow, type RawRouteEntry, type RouteRegistry } from './route.js';

/**
 * The raw fast path of the routes registered with `raw` (RawServing): one map lookup by method
 * and path finds the route, its gate admits the call, and the call is answered without Express —
 * its refusal too, with its registry body and the route's metrics. Only a body the raw reader
 * cannot read (compressed, not UTF-8) goes to Express, carrying the admission. Undefined when no
 * route is served raw.
 */
export function rawDispatch(
  registry: Pick<RouteRegistry, 'raw'>,
  ctx: { role: string; logger: Logger },
): FastPath | undefined {
  if (registry.raw.length === 0) return undefined;
  const { logger } = ctx;
  const routes = new Map<string, RawRouteEntry & { serve: ReturnType<typeof rawRoute> }>();
  for (const route of registry.raw)
    routes.set(`${route.method.toUpperCase()} ${route.path}`, {
      ...route,
      serve: rawRoute({ role: ctx.role, logger, route: route.path }),
    });

  return (req, res, toExpress) => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const route = routes.get(`${req.method} ${query < 0 ? url : url.slice(0, query)}`);
    if (!route) return false;
    const started = performance.now();
    const { gate, bodyLimit } = route.raw;
    gate
      .admit(req, res)
      .then(
        (admitted) => {
          if (bodyLimit !== undefined && !plainJsonBody(req)) {
            gate.carry(req, admitted);
            return toExpress();
          }
          route.serve(
            req,
            res,
            async () => {
              const sent = gate.sendOn ? gate.sendOn(req, res, admitted) : false;
              if (sent !== false && (await sent)) return undefined;
              let body: unknown;
              if (route.body && bodyLimit !== undefined) {
                const json = await readJsonBody(req, bodyLimit);
                body = route.raw.quickBody?.(json) ?? parseOrThrow(route.body, json, 'body');
              }
              return { status: 200, body: await route.raw.handler(admitted, body, req) };
            },
            started,
          );
        },
        (refusal: unknown) => route.serve(req, res, () => Promise.reject(refusal), started),
      )
      // Not expected (both branches answer their own failures), but never an unhandled rejection.
      .catch((err: unknown) => {
        logger.error({ err }, 'raw fast path failed');
        res.destroy();
      });
    return true;
  };
}
