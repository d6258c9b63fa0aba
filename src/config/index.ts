// Configuration: environment variables parsed once by zod.
export * from './config.js';
export { chooseLogFormat, type LogFormat, type LogFormatSetting } from './logging.js';
export { locateNativeParts, type NativeParts } from './native.js';
