import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { rawRequest } from './hostplane.js';
import { freePort } from './procs.js';

/** The built `hostplane` binary, run as a user would (`npm run build` first). */
export const bin = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const exec = promisify(execFile);

export interface Instance {
  env: NodeJS.ProcessEnv;
  port: number;
  dataDir: string;
  server?: ChildProcess;
  serverLog: string[];
}

/** A new data dir and port; `serve` and the CLI of this instance use them. */
export async function newInstance(extraEnv: NodeJS.ProcessEnv = {}): Promise<Instance> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-cli-'));
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    HOSTPLANE_DATA_DIR: dataDir,
    HOSTPLANE_METRICS_PORT: '0',
    HOSTPLANE_BASE_URL: `http://localhost:${port}`,
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  return { env, port, dataDir, serverLog: [] };
}

/** Starts `hostplane serve …args` and resolves once /readyz answers 200. */
export async function startServe(instance: Instance, args: string[] = []): Promise<void> {
  const child = spawn(process.execPath, [bin, 'serve', ...args], {
    env: instance.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => instance.serverLog.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => instance.serverLog.push(c.toString()));
  instance.server = child;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`serve exited early:\n${instance.serverLog.join('')}`);
    const ready = await rawRequest(instance.port, '/readyz', {}).catch(() => undefined);
    if (ready?.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`serve did not become ready:\n${instance.serverLog.join('')}`);
}

/** SIGTERM; resolves with the exit code. */
export async function stopServe(instance: Instance): Promise<number | null> {
  const child = instance.server;
  if (!child || child.exitCode !== null) return child?.exitCode ?? null;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

/** Runs `hostplane …args` to its end. */
export async function cli(
  instance: Pick<Instance, 'env'>,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [bin, ...args], { env: instance.env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export function siteRequest(instance: Instance, slug: string, pathAndQuery = '/') {
  return rawRequest(instance.port, pathAndQuery, { headers: { host: `${slug}.localhost:${instance.port}` } });
}

export function apiRequest(
  instance: Instance,
  pathAndQuery: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
) {
  return rawRequest(instance.port, pathAndQuery, {
    method: init.method,
    headers: { host: `localhost:${instance.port}`, 'content-type': 'application/json', ...init.headers },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
}

/** POST /api/v1/files/upload with `apiKey`; the answer is the caller's to check. */
export function apiUpload(instance: Instance, apiKey: string, json: { path: string; content: string }) {
  return apiRequest(instance, '/api/v1/files/upload', {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    json,
  });
}
