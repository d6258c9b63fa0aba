#!/usr/bin/env node
// The `hostplane` entry point: it sizes libuv's thread pool, installs the module resolve hook that
// keeps start-up fast on Node 22+ and turns on the compile cache (./module-hooks.ts), then loads
// the CLI (./run.ts). A static import of the CLI would resolve and compile every module before
// either is in place.
import { enableCompileCache, installFastRelativeResolve } from './module-hooks.js';

// libuv sizes its pool once, at its first use, which has not come when this line runs
// (test/e2e/thread-pool.test.ts counts the serve process's pool threads). A deploy's bulk upload
// writes many blobs, each a few file system calls on the pool; with Node's default of 4 threads, a
// disk that is slow to create files for a while queues them one behind the other (issue 29). The
// operator's own UV_THREADPOOL_SIZE stands (docs/operators/configuration.md).
process.env.UV_THREADPOOL_SIZE ??= '16';
enableCompileCache();
installFastRelativeResolve();
await import('./run.js');
