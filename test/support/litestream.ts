import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

/** Built by test/tools/build.sh from the pin in test/tools/litestream/go.mod. */
export const LITESTREAM_BIN = fileURLToPath(new URL('../../.cache/tools/litestream', import.meta.url));

/** Fails (never skips) when the binary is missing: the durability tests need the real process. */
export function requireLitestream(): string {
  try {
    accessSync(LITESTREAM_BIN, constants.X_OK);
  } catch {
    throw new Error(`Litestream binary not found at ${LITESTREAM_BIN}: run \`bash test/tools/build.sh\``);
  }
  return LITESTREAM_BIN;
}

/** The pids of `pid`'s direct children (a shard's Litestream). */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when there are none
  }
}
