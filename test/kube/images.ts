import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const IMAGES = path.join(REPO, '.cache', 'images');

export interface BuiltImage {
  /** OCI archive for `ctr images import`. */
  archive: string;
  /** The fully qualified reference pods name. */
  ref: string;
}

export interface BuiltImages {
  hostplane: BuiltImage;
  litestream: BuiltImage & { caBundlePath: string };
}

interface Recipe {
  litestream: { repository: string; caBundle: string };
}

/**
 * Builds the Hostplane image (hostplane:dev) and the Litestream image without Docker, with the
 * script `make image-oci` runs (cached layers: only the app layer is rebuilt after a code change).
 * IMAGE_TAG names another Hostplane tag (e.g. a worktree's, beside main's dev in a shared cache).
 */
export async function buildImages(): Promise<BuiltImages> {
  await run('bash', ['deploy/image/build.sh', 'all'], {
    cwd: REPO,
    maxBuffer: 64 << 20,
    timeout: 20 * 60_000,
  });
  const recipe = JSON.parse(readFileSync(path.join(REPO, 'deploy/image/recipe.json'), 'utf8')) as Recipe;
  const { stdout } = await run(path.join(REPO, '.cache/tools/litestream'), ['version']);
  const version = stdout.trim().replace(/^v/, '');
  const litestream = recipe.litestream.repository;
  const tag = process.env.IMAGE_TAG ?? 'dev';
  return {
    hostplane: {
      archive: path.join(IMAGES, `hostplane-${tag}.tar`),
      ref: `docker.io/library/hostplane:${tag}`,
    },
    litestream: {
      archive: path.join(IMAGES, `${litestream}-${version}.tar`),
      ref: `docker.io/library/${litestream}:${version}`,
      caBundlePath: recipe.litestream.caBundle,
    },
  };
}
