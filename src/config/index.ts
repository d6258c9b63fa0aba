// Configuration: environment variables parsed once by zod.
export * from './config.js';
