// The HTTP framework the domains build on: the route registry (validation + OpenAPI), body
// parsing, module and authenticator types, error mapping, the host handler a site host is served
// by, and the parts the composition root (src/server/) assembles an app from.
export * from './route.js';
export * from './module.js';
export * from './body.js';
export { bodyRefusal, errorHandler, errorResponse, notFoundHandler, toAppError } from './errors.js';
export { plainJsonBody, rawRoute, readJsonBody, sendJson } from './raw.js';
export { paginationJson } from './pagination.js';
export { hostOrigin, matchedOrigin, originHost } from './origins.js';
export { MAX_JSON_DEPTH, jsonNestsDeeper, jsonTooDeepMessage } from './json-depth.js';
export { answerBodyTimeoutWith, guardBodies } from './body-deadline.js';
export { normalizeHost, type HostHandler, type HostRoute } from './host.js';
export { requestLogging, requestMetrics, requestTracing } from './middleware.js';
export { docsRoutes } from './docs.js';
export { buildOpenApi } from './openapi.js';
export { toOriginForm } from './request-target.js';
