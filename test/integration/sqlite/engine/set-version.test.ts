import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlitePool } from '../../../../src/sqlite/engine/index.js';

// setVersion: after a point-in-time restore the file's counter is older than what clients saw;
// the shard sets it above that, durably, and writes go on counting from there.

let dir: string;
let pool: SqlitePool;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-setversion-'));
  pool = new SqlitePool({ size: 1 });
});

afterAll(async () => {
  await pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the version counter set by the engine', () => {
  it('is answered at once, kept in the file, and counted on by later writes', async () => {
    const file = path.join(dir, 'db.sqlite');
    let db = await pool.open(file, { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    expect((await db.version()).version).toBe(1);
    await db.setVersion(41);
    expect((await db.version()).version).toBe(41);
    expect((await db.exec('INSERT INTO t VALUES (1)')).version).toBe(42);
    await db.close();
    db = await pool.open(file, { maxBytes: null });
    expect((await db.version()).version).toBe(42);
    // Still not the tenant's to read.
    await expect(db.query('SELECT version FROM _meta')).rejects.toThrow(/prohibited/);
    await db.close();
  });
});
