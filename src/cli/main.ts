#!/usr/bin/env node
// The `hostplane` entry point: it installs the module resolve hook that keeps start-up fast on
// Node 22+ (./module-hooks.ts), then loads the CLI (./run.ts). A static import of the CLI would
// resolve every module before the hook is in place.
import { installFastRelativeResolve } from './module-hooks.js';

installFastRelativeResolve();
await import('./run.js');
