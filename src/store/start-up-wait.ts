import http from 'node:http';
import type { Config } from '../config/index.js';
import { unreachableDependency, type Dependency } from '../errors/index.js';
import type { Logger } from '../observability/index.js';

/**
 * A stand-in on the role's port while start-up waits (for the database, its schema or the blob
 * store): alive, so liveness does not restart a pod that is only early or waiting out an outage;
 * not ready, so no traffic reaches it. Started on first need, closed before the real server listens.
 */
export class StandInProbes {
  private server: http.Server | undefined;
  private reason = 'starting';

  constructor(private readonly where: Pick<Config, 'port' | 'host'> | undefined) {}

  /** Answers the probes (from now on, with `reason` on /readyz). */
  async up(reason: string): Promise<void> {
    this.reason = reason;
    if (this.server || !this.where) return;
    const server = http.createServer((req, res) => {
      const alive = req.url === '/healthz';
      res
        .writeHead(alive ? 200 : 503, { 'content-type': 'application/json', 'retry-after': '5' })
        .end(JSON.stringify(alive ? { status: 'ok' } : { status: this.reason }));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.where?.port, this.where?.host, resolve);
    });
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  }
}

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;

/**
 * Runs `attempt` until it stops failing for an unreachable dependency (any other failure is
 * thrown): with back-off (0.5 s doubling to 10 s), one log line per failed try with the delay, and
 * the probes unready meanwhile. Each try is bounded by its client (the pool's connection timeout,
 * the S3 SDK's); the wait itself is not: a supervisor restarting the process would do no better.
 */
export async function untilReachable<T>(
  attempt: () => Promise<T>,
  options: { logger: Logger; probes?: StandInProbes; sleep?: (ms: number) => Promise<void> },
): Promise<T> {
  const sleep = options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let delayMs = FIRST_DELAY_MS;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (err) {
      const dependency: Dependency | undefined = unreachableDependency(err);
      if (!dependency) throw err;
      options.logger.warn(
        { dependency, attempt: tries, retryInMs: delayMs, cause: messageOf(err) },
        `cannot reach the ${dependency}; not ready, trying again in ${delayMs} ms`,
      );
      await options.probes?.up(`waiting for the ${dependency}`);
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 2, MAX_DELAY_MS);
    }
  }
}

/** Node reports a refused connection to a name with two addresses as an AggregateError, no message. */
const messageOf = (err: unknown): string => {
  const e = err as { message?: string; errors?: Array<{ message?: string }> };
  return e?.message || e?.errors?.[0]?.message || String(err);
};
