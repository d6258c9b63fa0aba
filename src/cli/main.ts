#!/usr/bin/env node
// The `hostplane` entry point: it installs the module resolve hook that keeps start-up fast on
// Node 22+ and turns on the compile cache (./module-hooks.ts), then loads the CLI (./run.ts). A
// static import of the CLI would resolve and compile every module before either is in place.
import { enableCompileCache, installFastRelativeResolve } from './module-hooks.js';

enableCompileCache();
installFastRelativeResolve();
await import('./run.js');
