import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * One process per PGlite data directory: a second one would corrupt it.
 *
 * On Linux the lock is an abstract Unix socket whose name is derived from the directory's
 * real path. The kernel binds a name for one socket at a time and frees it when its process
 * ends, however it ends: taking the lock is atomic, a crashed holder's lock is free at once,
 * and a lock is never "stale" — so neither a leftover file nor an unrelated process that
 * happens to have the old pid can block a start, and starters racing for a directory never
 * both win. Elsewhere (no abstract sockets) a lock file is created exclusively, and a stale
 * one (its process gone) is taken over by renaming it away, which only one starter can do.
 * Either way `<dataDir>/pglite.lock` holds the holder's pid, for the message of the next.
 */

export class DataDirInUseError extends Error {
  constructor(dataDir: string, pid: number | null) {
    super(
      `The data directory ${dataDir} is in use by another memstore process${pid === null ? '' : ` (pid ${pid})`}. ` +
        'PGlite allows one process per data directory: stop that process, or point MEMSTORE_DATA_DIR elsewhere.',
    );
    this.name = 'DataDirInUseError';
  }
}

const LOCK_FILE = 'pglite.lock';

function holderPid(lockPath: string): number | null {
  try {
    const pid = Number.parseInt(fs.readFileSync(lockPath, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Writes the pid file beside the lock (information only); removes it on release if it is still ours. */
function pidFile(lockPath: string): () => void {
  const content = String(process.pid);
  fs.writeFileSync(`${lockPath}.${process.pid}`, content);
  fs.renameSync(`${lockPath}.${process.pid}`, lockPath);
  return () => {
    try {
      if (fs.readFileSync(lockPath, 'utf8') === content) fs.unlinkSync(lockPath);
    } catch {
      // Already gone.
    }
  };
}

async function lockWithAbstractSocket(dataDir: string, lockPath: string): Promise<() => void> {
  const name = `\0memstore-pglite-${createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 40)}`;
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new DataDirInUseError(dataDir, holderPid(lockPath)) : error));
    server.listen({ path: name, exclusive: true }, () => resolve());
  });
  // The lock must not keep the process alive by itself.
  server.unref();
  const removePidFile = pidFile(lockPath);
  return () => {
    removePidFile();
    server.close();
  };
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function lockWithFile(dataDir: string, lockPath: string): () => void {
  for (let attempt = 0; attempt < 10; attempt += 1) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      return () => {
        try {
          if (fs.readFileSync(lockPath, 'utf8') === String(process.pid)) fs.unlinkSync(lockPath);
        } catch {
          // Already gone.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = holderPid(lockPath);
    if (owner !== null && owner !== process.pid && isProcessAlive(owner)) throw new DataDirInUseError(dataDir, owner);
    // Stale: rename it away (only one starter can), and check it was the one judged stale.
    const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      fs.renameSync(lockPath, aside);
    } catch {
      continue; // Another starter took it over first: look again.
    }
    if (holderPid(aside) !== owner) {
      // A fresh lock, taken between the check and the rename: put it back.
      try {
        fs.linkSync(aside, lockPath);
      } catch {
        // Someone holds the name already.
      }
    }
    fs.rmSync(aside, { force: true });
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}

/** Takes the data directory for this process; the function returned releases it. Throws DataDirInUseError when another process holds it. */
export async function lockDataDir(dataDir: string): Promise<() => void> {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, LOCK_FILE);
  return process.platform === 'linux' ? lockWithAbstractSocket(dataDir, lockPath) : lockWithFile(dataDir, lockPath);
}
