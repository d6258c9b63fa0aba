// The runtime's ceiling beside the two servers of bench/sqlite: bare-node.mjs, a `node:http`
// server answering load.lua's Hostplane calls with Hostplane's bodies and headers and nothing
// else, alone and with a worker thread round trip per call (see bare-node.mjs). Driven like
// Hostplane's bare-token target (the same Lua arguments; the server checks none of them).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, terminate } from '../../test/support/procs.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export type BareVariant = 'node:http' | 'node:http + worker';
export const BARE_VARIANTS: readonly BareVariant[] = ['node:http', 'node:http + worker'];

export interface BareServer {
  variant: BareVariant;
  port: number;
  pid: number;
  /** The Lua arguments of a Hostplane bare-token target (token, origin, no user token). */
  luaArgs: string[];
  stop(): Promise<void>;
}

/** Starts bare-node.mjs with this process's Node (the bench runs under the pinned one). */
export async function startBare(variant: BareVariant): Promise<BareServer> {
  const port = await freePort();
  const args = [path.join(here, 'bare-node.mjs'), String(port)];
  if (variant === 'node:http + worker') args.push('--worker');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare-node.mjs exited (${code}) before it was ready`)));
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
  });
  const origin = `http://bench.localhost:${port}`;
  return {
    variant,
    port,
    pid: child.pid!,
    luaArgs: ['bare-node-checks-no-token', origin, '-'],
    stop: () => terminate(child, 'SIGTERM'),
  };
}
