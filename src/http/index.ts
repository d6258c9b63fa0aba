// The HTTP framework the domains build on: the request lifecycle, the route registry (validation
// + OpenAPI), body parsing, module and authenticator types, error mapping. App assembly (app.ts) is the entry
// point's business and is not exported here.
export * from './route.js';
export * from './module.js';
export * from './body.js';
export { bodyRefusal, errorHandler, errorResponse, notFoundHandler, toAppError } from './errors.js';
export { plainJsonBody, rawRoute, readJsonBody, sendJson, type RawAnswer } from './raw.js';
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
export { answerBodyTimeoutWith } from './body-deadline.js';
