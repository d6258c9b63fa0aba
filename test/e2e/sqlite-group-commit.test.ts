import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqlitePool } from '../../src/sqlite/engine/index.js';
import { exited } from '../support/procs.js';

// Group commit acknowledges nothing before its COMMIT: a process that inserts through many
// concurrent calls (so that its worker commits them in groups) is killed with SIGKILL, and every
// insert it had acknowledged is in the file when it is opened again. The engine of the build
// (dist/), in a process of its own, as `hostplane serve` runs it.

const engine = path.resolve('dist/src/sqlite/engine/index.js');

const child = `
const { SqlitePool } = await import(${JSON.stringify(pathToFileURL(engine).href)});
let grouped = 0;
const pool = new SqlitePool({ size: 1, onCall: (e) => { if (e.op === 'exec' && (e.group ?? 1) > 1) grouped++; } });
const db = await pool.open(process.env.DB_FILE, { maxBytes: null });
await db.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY)');
let next = 1;
process.stdout.write('ready\\n');
async function lane() {
  for (;;) {
    const id = next++;
    try {
      await db.exec('INSERT INTO t (id) VALUES (?)', [id]);
      process.stdout.write('ack ' + id + ' ' + grouped + '\\n');
    } catch {
      // not acknowledged
    }
  }
}
for (let i = 0; i < 64; i++) void lane();
`;

describe('group commit under kill -9', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hp-group-kill-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every insert it acknowledged, grouped ones included', async () => {
    if (!existsSync(engine)) throw new Error(`${engine} is missing: run \`npm run build\` first`);
    const file = path.join(dir, 'kill.sqlite');
    // A file, not --eval: the engine's worker would inherit --input-type.
    const script = path.join(dir, 'insert.mjs');
    writeFileSync(script, child);
    const proc = spawn(process.execPath, [script], {
      env: { ...process.env, DB_FILE: file },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked: number[] = [];
    let grouped = 0;
    let rest = '';
    const enough = new Promise<void>((resolve) => {
      proc.stdout.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString('utf8')).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          const [word, id, groups] = line.split(' ');
          if (word !== 'ack') continue;
          acked.push(Number(id));
          grouped = Number(groups);
        }
        if (acked.length >= 5_000 && grouped >= 1_000) resolve();
      });
    });
    const gone = exited(proc);
    await Promise.race([enough, gone]);
    proc.kill('SIGKILL');
    await gone;
    expect(grouped, 'inserts that shared a COMMIT before the kill').toBeGreaterThanOrEqual(1_000);

    const pool = new SqlitePool({ size: 1, limits: { maxRows: 1_000_000, maxResultBytes: 64 << 20 } });
    try {
      const db = await pool.open(file, { maxBytes: null });
      const { rows } = await db.query('SELECT id FROM t');
      const stored = new Set(rows.map((r) => r.id as number));
      const missing = acked.filter((id) => !stored.has(id));
      expect(missing, `${missing.length} of ${acked.length} acknowledged inserts missing`).toEqual([]);
    } finally {
      await pool.close();
    }
  }, 120_000);
});
