// Configuration: environment variables parsed once by zod.
export * from './config.js';
export * from './env-schema.js';
export * from './types.js';
export type { RoutingConfig, SiteTlsConfig } from './site-routing.js';
export { chooseLogFormat, type LogFormat, type LogFormatSetting } from './logging.js';
export { locateNativeParts, type NativeParts } from './native.js';
