import type { Logger } from '../observability/index.js';
import type { FastPath } from './module.js';
import { NOT_YET, plainJsonBody, rawRoute, readJsonBody, takeJsonBody } from './raw.js';
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
    const { gate, bodyLimit, quickBody, handler } = route.raw;
    const schema = route.body;
    const serveHere = (admitted: unknown): Promise<unknown> => {
      if (!schema || bodyLimit === undefined) return handler(admitted, undefined, req);
      const answer = (admitted: unknown, json: unknown) =>
        handler(admitted, quickBody?.(json) ?? parseOrThrow(schema, json, 'body'), req);
      const json = takeJsonBody(req, bodyLimit);
      return json === NOT_YET
        ? readJsonBody(req, bodyLimit).then((read) => answer(admitted, read))
        : answer(admitted, json);
    };
    let admission: unknown;
    try {
      admission = gate.admit(req, res);
    } catch (refusal) {
      admission = Promise.reject(refusal as Error);
    }
    // Served in a promise job even when admitted at once: the parser runs the jobs once it has
    // pushed a body that came with the headers, which takeJsonBody then takes whole.
    Promise.resolve(admission)
      .then(
        (admitted) => {
          if (bodyLimit !== undefined && !plainJsonBody(req)) {
            gate.carry(req, admitted);
            return toExpress();
          }
          route.serve(
            req,
            res,
            () => {
              const sent = gate.sendOn ? gate.sendOn(req, res, admitted) : false;
              if (sent === false) return serveHere(admitted);
              return sent.then((was) => (was ? undefined : serveHere(admitted)));
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
