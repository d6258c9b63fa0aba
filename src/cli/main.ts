#!/usr/bin/env node
// The `hostplane` entry point: it turns on Node's compile cache, then loads the CLI (./run.ts).
// A static import would compile every module before the cache is on.
import module from 'node:module';

// Node ≥ 22.1 keeps V8's compiled code of every module loaded (ours and node_modules) in a cache
// folder (NODE_COMPILE_CACHE, default <tmpdir>/node-compile-cache), so a warm start skips most of
// the compiling; an unwritable folder just leaves it off. Older Node has no such function.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import('./run.js');
