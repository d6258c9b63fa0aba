import { type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A port that was free a moment ago on 127.0.0.1 (bind port 0, read it, release it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not get a free port'))));
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Keeps the last `limit` characters a child process writes, for error messages. */
export function captureOutput(child: ChildProcess, limit = 16_384): () => string {
  let text = '';
  const add = (chunk: Buffer): void => {
    text = (text + chunk.toString('utf8')).slice(-limit);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => text.trim();
}

/** Resolves once the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends `signal`, then SIGKILL if the child is still alive after `graceMs`. */
export async function terminate(child: ChildProcess, signal: NodeJS.Signals, graceMs = 5_000): Promise<void> {
  const done = exited(child);
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}

/**
 * Polls `probe` until it resolves true. Fails early with the child's output when the child
 * exits, and after `timeoutMs` otherwise.
 */
export async function waitUntilReady(
  what: string,
  child: ChildProcess,
  output: () => string,
  probe: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${what} exited during startup (code ${child.exitCode}, signal ${child.signalCode}):\n${output()}`,
      );
    }
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const last = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`${what} did not become ready within ${timeoutMs} ms${last}:\n${output()}`);
    }
    await sleep(100);
  }
}
