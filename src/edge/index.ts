// The edge's public face: serving sites by Host from the file index and the blob store.
export { Edge, type SiteHandler } from './edge.js';
export { type EdgeOptions, type HostRoute, type SiteRef } from './cache.js';
export { decodeSitePath, namesDatabaseFile, isFingerprinted } from './paths.js';
export { cacheControlFor, IMMUTABLE, REVALIDATE } from './entries.js';
