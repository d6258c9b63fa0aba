// The edge's public face: serving sites by Host from the file index and the blob store.
export { Edge, normalizeHost, decodeSitePath, type EdgeOptions, type SiteRef } from './edge.js';
