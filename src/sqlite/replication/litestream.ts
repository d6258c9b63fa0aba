import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { access, readFile, writeFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from '../../observability/index.js';

/** What the shard hands Litestream: its own settings, never the whole process environment. */
export interface LitestreamOptions {
  bin: string;
  /** Where its config file goes (the shard's data dir). */
  dir: string;
  retentionHours: number;
  metricsPort: number | undefined;
  /** The address its /metrics listens on (default loopback, as the process's own). */
  metricsHost?: string;
  logger: Logger;
}

export interface ReplicaPosition {
  path: string;
  status: string;
  lastSyncAt: Date | undefined;
}

export interface RestoreWindow {
  earliest: Date;
  latest: Date;
}

/** A control-socket call Litestream refused or could not answer. */
export class LitestreamError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const CALL_TIMEOUT_MS = 60_000;
const CLI_TIMEOUT_MS = 30 * 60_000;
const CLI_MAX_OUTPUT = 16 * 1024 * 1024;

/**
 * The variables Litestream's S3 client reads (static keys, web identity, container credentials,
 * proxies, CA files). AWS_CA_BUNDLE is carried as SSL_CERT_FILE: Litestream 0.5's S3 client fails
 * to load any config while AWS_CA_BUNDLE is set ("unable to add custom RootCAs HTTPClient").
 */
const PASSED_ENV =
  /^(PATH|HOME|TZ|TMPDIR|SSL_CERT_FILE|SSL_CERT_DIR|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy|AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|REGION|DEFAULT_REGION|PROFILE|SHARED_CREDENTIALS_FILE|CONFIG_FILE|ROLE_ARN|ROLE_SESSION_NAME|WEB_IDENTITY_TOKEN_FILE|STS_REGIONAL_ENDPOINTS|CONTAINER_CREDENTIALS_FULL_URI|CONTAINER_CREDENTIALS_RELATIVE_URI|CONTAINER_AUTHORIZATION_TOKEN|CONTAINER_AUTHORIZATION_TOKEN_FILE|EC2_METADATA_DISABLED))$/;

export function litestreamEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env))
    if (value !== undefined && PASSED_ENV.test(key)) out[key] = value;
  if (env.AWS_CA_BUNDLE && !out.SSL_CERT_FILE) out.SSL_CERT_FILE = env.AWS_CA_BUNDLE;
  return out;
}

/**
 * One `litestream replicate` process, a child of the shard: its control socket registers and
 * unregisters databases as the shard opens and lets them go, and forces syncs; the same binary
 * restores a replica and lists its restore points. The shard owns its lifecycle, so a stop can
 * order "writes stopped, last sync, leases released" before Litestream goes.
 */
export class Litestream {
  private child: ChildProcess | undefined;
  private stopping = false;
  private exited: Promise<void> = Promise.resolve();
  /** Called when the process dies on its own (the shard restarts it and registers again). */
  onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | undefined;

  private constructor(
    private readonly options: LitestreamOptions,
    readonly socketPath: string,
    private readonly configPath: string,
  ) {}

  static async start(options: LitestreamOptions): Promise<Litestream> {
    // A Unix socket path is limited to ~107 bytes: the data dir can be longer, the temp dir is not.
    const socketPath = path.join(os.tmpdir(), `hostplane-litestream-${randomBytes(6).toString('hex')}.sock`);
    const configPath = path.join(options.dir, 'litestream.yml');
    const ls = new Litestream(options, socketPath, configPath);
    await writeFile(configPath, ls.configText(), { mode: 0o600 });
    await ls.stopLeftover();
    await ls.spawn();
    return ls;
  }

  private get pidFile(): string {
    return path.join(this.options.dir, 'litestream.pid');
  }

  /**
   * A Litestream left running by a shard that was killed (SIGKILL spares children outside a
   * container) would replicate the same files beside the new one and corrupt their replicas.
   */
  private async stopLeftover(): Promise<void> {
    const pid = Number(await readFile(this.pidFile, 'utf8').catch(() => ''));
    if (!Number.isInteger(pid) || pid <= 0) return;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(this.configPath)) return; // gone, or the pid now belongs to another process
    this.options.logger.warn({ pid }, 'stopping a litestream left running by an earlier shard process');
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 100 && (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')); i++)
      await new Promise((r) => setTimeout(r, 20));
  }

  private configText(): string {
    const { retentionHours, metricsPort, metricsHost = '127.0.0.1' } = this.options;
    const metricsAddr = `${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${metricsPort}`;
    // A snapshot at least daily (and within the window) so the oldest restore point moves on and
    // restores replay at most a day of changes.
    const snapshotHours = Math.min(24, retentionHours);
    return [
      '# Written by hostplane at start: databases are registered on the control socket.',
      'socket:',
      '  enabled: true',
      `  path: ${JSON.stringify(this.socketPath)}`,
      '  permissions: 0600',
      ...(metricsPort ? [`addr: ${JSON.stringify(metricsAddr)}`] : []),
      'snapshot:',
      `  interval: ${snapshotHours}h`,
      `  retention: ${retentionHours}h`,
      'dbs: []',
      '',
    ].join('\n');
  }

  /** Starts the process and waits until its control socket answers. */
  async spawn(): Promise<void> {
    this.stopping = false;
    const child = spawn(this.options.bin, ['replicate', '-config', this.configPath], {
      env: litestreamEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.exited = once(child, 'exit').then(() => undefined);
    if (child.pid) await writeFile(this.pidFile, String(child.pid));
    for (const stream of [child.stdout, child.stderr]) this.forwardLog(stream);
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (err) => reject(new LitestreamError(`litestream could not start: ${err.message}`)));
      child.once('exit', (code, signal) =>
        reject(new LitestreamError(`litestream exited at start (${signal ?? `code ${code}`})`)),
      );
    });
    failed.catch(() => undefined);
    await Promise.race([this.waitForSocket(), failed]);
    child.on('exit', (code, signal) => {
      if (!this.stopping) this.onExit?.(code, signal);
    });
    // A later 'error' (a failed kill) must not go unheard: that would end the process.
    child.on('error', (err) => this.options.logger.warn({ err }, 'litestream process error'));
  }

  private async waitForSocket(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await this.call('GET', '/info');
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Litestream's log lines (slog text) into ours, at their level. */
  private forwardLog(stream: NodeJS.ReadableStream | null): void {
    if (!stream) return;
    const { logger } = this.options;
    createInterface({ input: stream }).on('line', (line) => {
      // With no databases in its config (they come over the socket) it logs this at ERROR.
      if (line.includes('no databases specified in configuration')) return;
      const level = /level=(\w+)/.exec(line)?.[1];
      if (level === 'ERROR') logger.error({ litestream: line }, 'litestream');
      else if (level === 'WARN') logger.warn({ litestream: line }, 'litestream');
      else logger.debug({ litestream: line }, 'litestream');
    });
  }

  async register(file: string, replicaUrl: string): Promise<void> {
    await this.call('POST', '/register', { path: file, replica_url: replicaUrl });
  }

  /** Stops replicating `file` (after a last sync of what it has seen). */
  async unregister(file: string): Promise<void> {
    await this.call('POST', '/unregister', { path: file, timeout: 30 });
  }

  /**
   * Replicates what the WAL holds now; with `wait`, returns once the replica has it. The answer
   * says how far the file and the replica are (equal: in step).
   */
  async sync(
    file: string,
    wait = true,
    timeoutSeconds = 30,
  ): Promise<{ txid: number; replicatedTxid: number }> {
    const body = wait ? { path: file, wait, timeout: timeoutSeconds } : { path: file };
    const answer = (await this.call('POST', '/sync', body)) as {
      txid: number;
      replicated_txid: number;
    };
    return { txid: answer.txid, replicatedTxid: answer.replicated_txid };
  }

  async list(): Promise<ReplicaPosition[]> {
    const answer = (await this.call('GET', '/list')) as {
      databases: { path: string; status: string; last_sync_at?: string }[];
    };
    return answer.databases.map((d) => ({
      path: d.path,
      status: d.status,
      lastSyncAt: d.last_sync_at ? new Date(d.last_sync_at) : undefined,
    }));
  }

  /**
   * Restores the replica at `replicaUrl` into `out` (which must not exist), to `timestamp` when
   * given, checking the result's integrity. False when there is no replica to restore.
   */
  async restore(replicaUrl: string, out: string, timestamp?: Date): Promise<boolean> {
    const args = ['restore', '-if-replica-exists', '-integrity-check', 'quick', '-o', out];
    if (timestamp) args.push('-timestamp', timestamp.toISOString());
    await this.run([...args, replicaUrl]);
    // -if-replica-exists exits 0 without writing a file when there is nothing to restore.
    return access(out).then(
      () => true,
      () => false,
    );
  }

  /** The earliest and latest restorable times of a replica; undefined when it has none. */
  async restoreWindow(replicaUrl: string): Promise<RestoreWindow | undefined> {
    const { stdout } = await this.run(['ltx', '-level', 'all', '-json', replicaUrl]);
    let files: unknown;
    try {
      files = JSON.parse(stdout || '[]');
    } catch {
      throw new LitestreamError('litestream ltx: unreadable output');
    }
    if (!Array.isArray(files)) return undefined;
    // The oldest snapshot (level 9) bounds how far back a restore reaches; without one, any file.
    let [earliestSnapshot, earliestAny, latest] = [Infinity, Infinity, -Infinity];
    for (const f of files as { level?: unknown; timestamp?: unknown }[]) {
      const t = typeof f.timestamp === 'string' ? Date.parse(f.timestamp) : NaN;
      if (!Number.isFinite(t)) continue;
      if (f.level === 9) earliestSnapshot = Math.min(earliestSnapshot, t);
      earliestAny = Math.min(earliestAny, t);
      latest = Math.max(latest, t);
    }
    if (!Number.isFinite(latest)) return undefined;
    const earliest = Number.isFinite(earliestSnapshot) ? earliestSnapshot : earliestAny;
    return { earliest: new Date(earliest), latest: new Date(latest) };
  }

  /** Stops the process (SIGTERM; SIGKILL after `graceMs`) and removes its socket and config. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    await rm(this.socketPath, { force: true });
    await rm(this.pidFile, { force: true });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private run(args: string[]): Promise<{ stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      execFile(
        this.options.bin,
        args,
        { env: litestreamEnv(), timeout: CLI_TIMEOUT_MS, maxBuffer: CLI_MAX_OUTPUT },
        (err, stdout, stderr) => {
          if (err)
            reject(new LitestreamError(`litestream ${args[0]} failed: ${lastLine(stderr) || err.message}`));
          else resolve({ stdout, stderr });
        },
      );
    });
  }

  private call(method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          socketPath: this.socketPath,
          method,
          path: route,
          headers: payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {},
          timeout: CALL_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = text ? JSON.parse(text) : {};
            } catch {
              parsed = { error: text };
            }
            if ((res.statusCode ?? 500) >= 400) {
              const message = (parsed as { error?: string }).error ?? `HTTP ${res.statusCode}`;
              reject(new LitestreamError(`litestream ${route}: ${message}`, res.statusCode));
            } else resolve(parsed);
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new LitestreamError(`litestream ${route}: no answer in time`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 500);
}
