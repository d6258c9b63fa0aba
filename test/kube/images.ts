import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface BuiltImage {
  /** OCI archive for `ctr images import`. */
  archive: string;
  /** The fully qualified reference pods name (e.g. docker.io/library/hostplane:dev). */
  ref: string;
}

export interface BuiltImages {
  hostplane: BuiltImage;
  litestream: BuiltImage & { caBundlePath: string };
}

/**
 * Builds (or finds cached) the Hostplane and Litestream images without Docker, with the same
 * script `make image-oci` runs. It prints one JSON object describing what it built.
 */
export async function buildImages(): Promise<BuiltImages> {
  const { stdout } = await run('bash', ['deploy/image/build.sh', '--json'], {
    cwd: REPO,
    maxBuffer: 64 << 20,
    timeout: 20 * 60_000,
  });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as BuiltImages;
}
