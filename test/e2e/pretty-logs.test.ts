import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { exited, terminate } from '../support/procs.js';

// Issue 33, "Logs a person can read": `hostplane serve` (what `make run` starts) on a terminal
// prints readable lines; into a pipe, or with HOSTPLANE_LOG_FORMAT=json, pino's JSON lines. The
// terminal is a real pseudo-terminal: util-linux `script` runs the command on one and copies what
// it prints to our pipe.

const ansi = /\x1b\[[0-9;]*m/g; // eslint-disable-line no-control-regex
const linesOf = (text: string) =>
  text
    .replace(ansi, '')
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '');

/** Runs `argv` on a pseudo-terminal until `doneWhen` holds for its output (or it exits); then SIGTERM. */
async function onTerminal(argv: string[], env: NodeJS.ProcessEnv, doneWhen: (out: string) => boolean) {
  const command = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const deadline = Date.now() + 30_000;
  while (!doneWhen(out) && child.exitCode === null && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  await terminate(child, 'SIGTERM');
  await exited(child);
  return out;
}

const started = (out: string) => out.includes('metrics on');

describe('log lines on a terminal and in a pipe', () => {
  const instances: Instance[] = [];
  beforeAll(() => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    if (spawnSync('script', ['--version']).status !== 0)
      throw new Error('util-linux `script` is missing (apt-get install bsdutils)');
  });
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.server && terminate(i.server, 'SIGKILL', 0)));
    await Promise.all(instances.map((i) => rm(i.dataDir, { recursive: true, force: true })));
  });

  it('hostplane serve on a terminal prints readable lines: time, level word, message, no JSON', async () => {
    const instance = await newInstance();
    instances.push(instance);
    const lines = linesOf(await onTerminal([process.execPath, bin, 'serve'], instance.env, started));
    const listening = lines.find((l) => l.includes('hostplane listening'));
    expect(listening, lines.join('\n')).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hostplane listening/);
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    expect(lines.some((l) => /^\[[\d:.]+\] WARN: mail is off/.test(l))).toBe(true);
    // The noise is dropped: no pid, host name or service on every line.
    expect(lines.join('\n')).not.toMatch(/\bpid\b|hostname|service: "hostplane"/);
  });

  it('keeps secrets [redacted] in pretty lines (the logger serve makes, on a terminal)', async () => {
    const instance = await newInstance();
    instances.push(instance);
    const dist = (p: string) => pathToFileURL(path.join(path.dirname(bin), '..', p)).href;
    const script = path.join(instance.dataDir, 'log-secrets.mjs');
    await writeFile(
      script,
      `import { loadConfig } from '${dist('config/index.js')}';
import { createLogger } from '${dist('observability/index.js')}';
const config = loadConfig(process.env);
const logger = createLogger(config.logLevel, undefined, config.logFormat);
logger.info({ apiKey: 'AK-secret-value', token: 'TK-secret-value', user: { password: 'PW-secret-value' } }, 'redaction check');
logger.flush?.();
`,
    );
    const out = await onTerminal([process.execPath, script], instance.env, () => false); // to its exit
    const lines = linesOf(out);
    expect(
      lines.find((l) => l.includes('redaction check')),
      out,
    ).toMatch(/^\[[\d:.]+\] INFO: redaction check/);
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    const text = lines.join('\n');
    expect(text).toContain('token: "[redacted]"');
    expect(text).toContain('"password": "[redacted]"'); // nested objects are printed as JSON
    for (const secret of ['AK-secret-value', 'TK-secret-value', 'PW-secret-value'])
      expect(out).not.toContain(secret);
  });

  it('with HOSTPLANE_LOG_FORMAT=json a terminal gets JSON lines', async () => {
    const instance = await newInstance({ HOSTPLANE_LOG_FORMAT: 'json' });
    instances.push(instance);
    const lines = linesOf(await onTerminal([process.execPath, bin, 'serve'], instance.env, started));
    const json = lines.filter((l) => !l.startsWith('Session terminated')).map((l) => JSON.parse(l) as object);
    expect(json).toContainEqual(expect.objectContaining({ level: 30, msg: 'hostplane listening' }));
  });

  it('into a pipe (auto) hostplane serve writes one JSON object a line', async () => {
    const instance = await newInstance();
    instances.push(instance);
    await startServe(instance);
    // /readyz answers while start-up still runs (the stand-in probes): wait for its last line.
    const deadline = Date.now() + 30_000;
    while (!started(instance.serverLog.join('')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(await stopServe(instance)).toBe(0);
    const lines = linesOf(instance.serverLog.join(''));
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    expect(lines.map((l) => JSON.parse(l) as object)).toContainEqual(
      expect.objectContaining({ level: 30, service: 'hostplane', msg: 'hostplane listening' }),
    );
  });
});
