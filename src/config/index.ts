// Configuration: environment variables parsed once by zod.
export * from './config.js';
export { locateNativeParts, type NativeParts } from './native.js';
