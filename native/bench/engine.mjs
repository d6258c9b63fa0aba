// Measures the SQLite engine on this machine (numbers go to the README's engine section):
//   node native/bench/engine.mjs        (Node 24: `scripts/node.sh exec node native/bench/engine.mjs`)
// 1. the guard's per-statement cost: stock better-sqlite3 (its prebuilt binary, no guard) against
//    the rebuilt binding with the guard loaded, for a prepared point read, a prepare+run, and a scan
//    (the progress handler fires every 1000 VM instructions);
// 2. the engine's own steps around a tenant statement (guard mode switches);
// 3. in-process throughput of the engine (GuardedDatabase, no worker): point reads and single inserts;
// 4. through the worker pool: one call's round trip, and throughput with 64 calls in flight.
/* global console, process -- Node globals; the ESLint config has none for .mjs */
import { mkdtempSync, rmSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

// Run the TypeScript sources directly (Node strips the types; map their ./x.js imports to ./x.ts).
registerHooks({
  resolve(specifier, context, next) {
    if (/^\.\.?\//.test(specifier) && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      return next(specifier.slice(0, -3) + '.ts', context);
    }
    return next(specifier, context);
  },
});
const { default: Database } = await import('better-sqlite3');
const { GuardedDatabase } = await import('../../src/sqlite/engine/connection.ts');
const { SqlitePool, DEFAULT_LIMITS, locateNativeParts } = await import('../../src/sqlite/engine/index.ts');

const native = locateNativeParts();
const dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-bench-'));
const ROWS = 10_000;

function time(label, iterations, fn) {
  for (let i = 0; i < Math.min(iterations, 2000); i++) fn(i); // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn(i);
  const ns = Number(process.hrtime.bigint() - started) / iterations;
  console.log(
    `${label.padEnd(58)} ${(ns / 1000).toFixed(2).padStart(8)} µs/op ${Math.round(1e9 / ns)
      .toString()
      .padStart(9)} op/s`,
  );
  return ns;
}

function seed(db) {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`value ${i}`);
  })();
}

console.log(`node ${process.version}, ${ROWS} rows\n\n1. guard cost per statement`);
const stock = new Database(path.join(dir, 'stock.sqlite'));
seed(stock);
const guarded = new Database(path.join(dir, 'guarded.sqlite'), { nativeBinding: native.binding });
seed(guarded);
guarded.loadExtension(native.guard);
const secret = guarded.prepare("SELECT _hp_guard('init')").pluck().get();
const tenant = guarded.prepare("SELECT _hp_guard(?, 'tenant', ?)");
const engine = guarded.prepare("SELECT _hp_guard(?, 'engine')");
tenant.run(secret, 60_000n);

const id = (i) => (i % ROWS) + 1;
for (const [name, db] of [
  ['stock', stock],
  ['guarded', guarded],
]) {
  const get = db.prepare('SELECT v FROM t WHERE id = ?');
  time(`${name}: prepared point read`, 200_000, (i) => get.get(id(i)));
}
for (const [name, db] of [
  ['stock', stock],
  ['guarded', guarded],
]) {
  time(`${name}: prepare + point read (authorizer at prepare)`, 50_000, (i) =>
    db.prepare('SELECT v FROM t WHERE id = ?').get(id(i)),
  );
}
for (const [name, db] of [
  ['stock', stock],
  ['guarded', guarded],
]) {
  const scan = db.prepare("SELECT count(*) FROM t WHERE v LIKE '%9%'");
  time(`${name}: scan of ${ROWS} rows (progress handler)`, 300, () => scan.get());
}
console.log("\n2. the engine's mode switches around a tenant statement");
time('tenant + engine switch (two extra steps)', 200_000, () => {
  tenant.run(secret, 2000n);
  engine.run(secret);
});
stock.close();
guarded.close();

console.log('\n3. in-process engine (GuardedDatabase, no worker)');
const inproc = new GuardedDatabase(
  path.join(dir, 'inproc.sqlite'),
  { maxBytes: null },
  DEFAULT_LIMITS,
  native,
);
inproc.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
inproc.batch(
  Array.from({ length: 500 }, (_, i) => ({ sql: 'INSERT INTO t (v) VALUES (?)', params: [`v${i}`] })),
);
time('query: point read', 50_000, (i) => inproc.query('SELECT id, v FROM t WHERE id = ?', [(i % 500) + 1]));
time('exec: single-row insert (own transaction, version bump)', 20_000, (i) =>
  inproc.exec('INSERT INTO t (v) VALUES (?)', [`w${i}`]),
);
inproc.close();

console.log('\n4. through the worker pool');
const pool = new SqlitePool({ size: 2 });
const db = await pool.open(path.join(dir, 'pool.sqlite'), { maxBytes: null });
await db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
await db.batch(
  Array.from({ length: 500 }, (_, i) => ({ sql: 'INSERT INTO t (v) VALUES (?)', params: [`v${i}`] })),
);
async function timeAsync(label, iterations, inFlight, fn) {
  let next = 0;
  const run = async () => {
    while (next < iterations) await fn(next++);
  };
  await Promise.all(Array.from({ length: inFlight }, run)); // warm-up pass
  next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inFlight }, run));
  const ns = Number(process.hrtime.bigint() - started) / iterations;
  console.log(
    `${label.padEnd(58)} ${(ns / 1000).toFixed(2).padStart(8)} µs/op ${Math.round(1e9 / ns)
      .toString()
      .padStart(9)} op/s`,
  );
}
await timeAsync('query SELECT 1, one at a time (round trip)', 20_000, 1, () => db.query('SELECT 1'));
await timeAsync('query point read, one at a time', 20_000, 1, (i) =>
  db.query('SELECT id, v FROM t WHERE id = ?', [(i % 500) + 1]),
);
await timeAsync('query point read, 64 in flight', 50_000, 64, (i) =>
  db.query('SELECT id, v FROM t WHERE id = ?', [(i % 500) + 1]),
);
await timeAsync('exec insert, one at a time', 10_000, 1, (i) =>
  db.exec('INSERT INTO t (v) VALUES (?)', [`p${i}`]),
);
await timeAsync('exec insert, 64 in flight', 20_000, 64, (i) =>
  db.exec('INSERT INTO t (v) VALUES (?)', [`q${i}`]),
);
await pool.close();
rmSync(dir, { recursive: true, force: true });
