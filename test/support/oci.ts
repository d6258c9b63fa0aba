import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chown, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { captureOutput, exited } from './procs.js';

// Images from deploy/image/build.sh (`make image-oci`), run with runc as the chart runs them: the
// image's non-root user, a read-only root filesystem, no capabilities, /tmp a tmpfs (the chart's
// emptyDir). The containers share the host's network namespace, so a test reaches them on a
// loopback port.

const exec = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));
export const imagesDir = path.join(repo, '.cache', 'images');

/** The OCI archive of `<repository>-<tag>` in .cache/images/. */
export const imageArchive = (name: string) => path.join(imagesDir, `${name}.tar`);

/** Fails with what is missing: root, runc, umoci or the archive itself. */
export async function requireRuncAndImage(archive: string): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('running images with runc needs root');
  for (const tool of ['runc', 'umoci']) {
    await exec(tool, ['--version']).catch(() => {
      throw new Error(`${tool} is not installed (apt-get install ${tool}; test/tools/build.sh does it)`);
    });
  }
  if (!existsSync(archive))
    throw new Error(`${archive} is missing: run \`make image-oci\` (make test does) first`);
}

/** Unpacks the archive's image (its only tag) into `<dir>/bundle`: rootfs/ and a config.json from the image. */
export async function unpackBundle(archive: string, dir: string): Promise<string> {
  const layout = path.join(dir, 'layout');
  await mkdir(layout, { recursive: true });
  await exec('tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(await readFile(path.join(layout, 'index.json'), 'utf8')) as {
    manifests: { annotations?: Record<string, string> }[];
  };
  const tag = index.manifests[0]?.annotations?.['org.opencontainers.image.ref.name'];
  if (!tag) throw new Error(`${archive}: its index names no image`);
  const bundle = path.join(dir, 'bundle');
  await exec('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle]);
  return bundle;
}

export interface RuntimeProcess {
  user: { uid: number; gid: number };
  args: string[];
  env: string[];
  cwd: string;
}

interface RuntimeConfig {
  process: RuntimeProcess & Record<string, unknown>;
  root: { path: string; readonly?: boolean };
  mounts: { destination: string; type: string; source: string; options: string[] }[];
  linux: { namespaces: { type: string }[] } & Record<string, unknown>;
}

export interface HardenOptions {
  /** Replaces the image's entrypoint + cmd. */
  args?: string[];
  /** Added to (and overriding) the image's environment. */
  env?: Record<string, string>;
  /** Host directories bound into the container: [host path, container path, read-only]. */
  binds?: [string, string, boolean][];
}

/**
 * Writes the bundle's config.json as the chart's securityContext runs it, from the image's own
 * (kept as config.image.json, so a bundle can be run again with other options); returns the
 * image's process.
 */
export async function hardenBundle(bundle: string, options: HardenOptions = {}): Promise<RuntimeProcess> {
  const file = path.join(bundle, 'config.json');
  const original = path.join(bundle, 'config.image.json');
  if (!existsSync(original)) await copyFile(file, original);
  const config = JSON.parse(await readFile(original, 'utf8')) as RuntimeConfig;
  const image = structuredClone(config.process);
  const env = new Map(config.process.env.map((e) => [e.slice(0, e.indexOf('=')), e] as const));
  for (const [k, v] of Object.entries(options.env ?? {})) env.set(k, `${k}=${v}`);
  config.process = {
    ...config.process,
    terminal: false,
    args: options.args ?? config.process.args,
    env: [...env.values()],
    noNewPrivileges: true,
    capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
  };
  config.root.readonly = true;
  config.mounts.push({
    destination: '/tmp',
    type: 'tmpfs',
    source: 'tmpfs',
    options: ['nosuid', 'nodev', 'mode=1777', 'size=256m'],
  });
  for (const [source, destination, readOnly] of options.binds ?? []) {
    config.mounts.push({ destination, type: 'bind', source, options: ['rbind', readOnly ? 'ro' : 'rw'] });
  }
  config.linux.namespaces = config.linux.namespaces.filter((ns) => ns.type !== 'network');
  await writeFile(file, JSON.stringify(config, null, 2));
  return image;
}

export interface Container {
  id: string;
  child: ChildProcess;
  output: () => string;
}

/** `runc run` in the foreground (the test's child); `removeContainer` ends it. */
export function runContainer(bundle: string, id: string): Container {
  const child = spawn('runc', ['run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  return { id, child, output: captureOutput(child) };
}

/** Runs a container to its end: `runc run` of a bundle, its exit code and output. */
export async function runToEnd(bundle: string, id: string): Promise<{ code: number; output: string }> {
  const container = runContainer(bundle, id);
  await exited(container.child);
  await exec('runc', ['delete', '--force', id]).catch(() => undefined);
  return { code: container.child.exitCode ?? -1, output: container.output() };
}

/** `runc exec` in a running container, as its process's user, in its cwd or `options.cwd`. */
export async function execIn(
  id: string,
  args: string[],
  options: { cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const flags = options.cwd ? ['--cwd', options.cwd] : [];
  try {
    const { stdout, stderr } = await exec('runc', ['exec', ...flags, id, ...args]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Sends `signal` to the container's process (the kubelet's stop), waits for it to end, removes it; its exit code. */
export async function stopContainer(container: Container, signal: 'TERM' | 'INT'): Promise<number | null> {
  await exec('runc', ['kill', container.id, signal]);
  await exited(container.child);
  await exec('runc', ['delete', '--force', container.id]).catch(() => undefined);
  return container.child.exitCode;
}

export async function removeContainer(container: Container): Promise<void> {
  await exec('runc', ['kill', container.id, 'KILL']).catch(() => undefined);
  await exited(container.child);
  await exec('runc', ['delete', '--force', container.id]).catch(() => undefined);
}

/** deploy/image/recipe.json: what the Hostplane image runs, as whom, where. */
export const imageRecipe = JSON.parse(
  readFileSync(path.join(repo, 'deploy', 'image', 'recipe.json'), 'utf8'),
) as {
  user: { uid: number; gid: number };
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  litestream: { repository: string };
};
/** The image's user, who owns the chart's emptyDirs and PVCs through fsGroup. */
export const imageUser = imageRecipe.user;

/** A host folder standing for an emptyDir or a PVC: writable by the image's user. */
export async function podVolume(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await chown(dir, imageUser.uid, imageUser.gid);
  return dir;
}

/** The chart's sqlite.litestream values (the init container's `cp` and the emptyDir it fills). */
export const litestreamValues = (
  parse(readFileSync(path.join(repo, 'charts', 'hostplane', 'values.yaml'), 'utf8')) as {
    sqlite: { litestream: { image: { tag: string }; binaryPath: string; caBundlePath: string } };
  }
).sqlite.litestream;
export const litestreamBinDir = '/opt/litestream'; // templates/sqlite.yaml's emptyDir

/**
 * The sqlite pods' init container: the Litestream image runs the chart's
 * `cp <binary> <CA bundle> /opt/litestream/` into `<dir>/litestream-bin`; returns that folder.
 */
export async function runLitestreamInit(archive: string, dir: string): Promise<string> {
  const binDir = await podVolume(path.join(dir, 'litestream-bin'));
  const bundle = await unpackBundle(archive, path.join(dir, 'litestream'));
  await hardenBundle(bundle, {
    args: ['cp', litestreamValues.binaryPath, litestreamValues.caBundlePath, `${litestreamBinDir}/`],
    binds: [[binDir, litestreamBinDir, false]],
  });
  const copied = await runToEnd(bundle, `hp-litestream-init-${process.pid}-${path.basename(dir)}`);
  if (copied.code !== 0)
    throw new Error(`the init container's cp failed (${copied.code}):\n${copied.output}`);
  return binDir;
}

/** The archives `make image-oci` writes (IMAGE_TAG dev; Litestream at the chart's default tag). */
export const hostplaneArchive = imageArchive('hostplane-dev');
export const litestreamArchive = imageArchive(
  `${imageRecipe.litestream.repository}-${litestreamValues.image.tag}`,
);
