// The HTTP framework the domains build on: the request lifecycle, the route registry (validation +
// OpenAPI), body parsing, module and authenticator types, error mapping, the host handler a site
// host is served by, and the parts the composition root (src/server/) assembles an app from.
export * from './route.js';
export * from './module.js';
export * from './body.js';
export { bodyRefusal, errorHandler, errorResponse, notFoundHandler, toAppError } from './errors.js';
export { JsonText, plainJsonBody, rawRoute, readJsonBody, sendJson, type RawAnswer } from './raw.js';
export { rawDispatch } from './raw-dispatch.js';
export {
  lifecycleHandler,
  requestLifecycle,
  type LifecycleFailure,
  type LifecycleHandle,
  type LifecycleOptions,
} from './lifecycle.js';
export { paginationJson } from './pagination.js';
export { hostOrigin, matchedOrigin, originHost } from './origins.js';
export { MAX_JSON_DEPTH, jsonNestsDeeper, jsonTooDeepMessage } from './json-depth.js';
export { answerBodyTimeoutWith, guardBodies } from './body-deadline.js';
export { normalizeHost, type HostHandler, type HostRoute } from './host.js';
export { docsRoutes } from './docs.js';
export { denyFraming, FRAME_ANCESTORS_NONE } from './framing.js';
export { buildOpenApi } from './openapi.js';
export { describeIssue } from './validation.js';
export { toOriginForm } from './request-target.js';
export { ByteBudget, type ByteBudgetLimits, type Reservation } from './byte-budget.js';
export { UploadAdmission, type BodyCost } from './upload-admission.js';
