import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { locateNativeParts } from '../config/index.js';
import { AppError } from '../errors/index.js';

/** PGlite's folder is open in another live process (only one may open it); `pid` 0: unknown. */
const locked = (pid: number, dir: string) => new AppError('DATA_DIR_LOCKED', { pid, dir });

/**
 * Takes the data dir's lock, or throws DATA_DIR_LOCKED while another live process holds it;
 * resolves with the release function.
 *
 * The lock is a POSIX record lock (fcntl) that the kernel drops when its holder dies, whatever
 * the pid becomes afterwards: a pid file could not tell a crashed holder from a new process that
 * reuses its pid. Node has no flock/fcntl, so it is taken through SQLite, which we already ship:
 * an exclusive transaction held open on a small lock database in exclusive locking mode. The pid
 * beside it is only for the message.
 */
export async function lockDataDir(dir: string): Promise<() => void> {
  const resolved = path.resolve(dir);
  const lockFile = `${resolved}.lock.sqlite`;
  const pidFile = `${resolved}.lock.pid`;
  mkdirSync(path.dirname(lockFile), { recursive: true });
  const { default: Database } = await import('better-sqlite3');
  // timeout 0: a held lock is answered at once (SQLITE_BUSY), never waited for.
  const db = new Database(lockFile, { nativeBinding: locateNativeParts().binding, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw locked(readPid(pidFile), resolved);
    }
    throw err;
  }
  // The pid file that versions before this lock used as their only lock: a process of such a
  // version still running holds nothing else, so while its pid lives it is refused as a holder
  // (for one release; a dead pid, or ours, is a leftover and removed).
  const legacyHolder = readPid(`${resolved}.lock`);
  if (legacyHolder > 0 && legacyHolder !== process.pid && isAlive(legacyHolder)) {
    db.close();
    throw locked(legacyHolder, resolved);
  }
  rmSync(`${resolved}.lock`, { force: true });
  writeFileSync(pidFile, String(process.pid), { mode: 0o600 });
  let released = false;
  return () => {
    if (released) return;
    released = true;
    rmSync(pidFile, { force: true });
    db.close();
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as { code?: unknown }).code === 'EPERM';
  }
}

function readPid(pidFile: string): number {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return 0;
  }
}
