// Every domain's tables, gathered for drizzle (the Db type and drizzle-kit's migrations). Each
// domain owns its tables.ts; other domains call that domain's public functions instead.
export * from '../platform/tables.js';
export * from '../files/tables.js';
export * from '../publish/tables.js';
export * from '../ratelimit/tables.js';
export * from '../forms/tables.js';
export * from '../sqlite/tables.js';
export * from '../mail/tables.js';
