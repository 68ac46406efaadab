import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ANNOUNCEMENTS_APPLICATION_NAME } from '../src/db/announcements.js';
import { lockDataDir } from '../src/db/data-dir-lock.js';
import { databaseTarget, describeDatabaseOpenFailure } from '../src/db/open-errors.js';
import { postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * A server that cannot start says why in one line on stderr (no stack trace) and exits
 * non-zero: database missing, connection refused, authentication failed, data dir locked,
 * port in use.
 */

const running: ServerProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

afterAll(async () => {
  for (const server of running.splice(0)) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function temporaryDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-startup-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts the server, expects it to fail, and returns its exit code and its stderr's lines. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | string; lines: string[] }> {
  const server = startServerProcess({ MEMSTORE_DATA_DIR: temporaryDir(), ...env });
  running.push(server);
  const code = await server.exited;
  return { code, lines: server.stderr().split('\n').filter((line) => line.trim() !== '') };
}

/** A TCP port on 127.0.0.1 that nothing listens on (taken and let go). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * A stand-in for a PostgreSQL server that answers every startup message as a server with
 * password authentication does for a wrong password (SQLSTATE 28P01): the local cluster
 * trusts local connections, so it never asks for one.
 */
async function passwordRefusingServer(): Promise<string> {
  const server = net.createServer((socket) => {
    socket.once('data', () => {
      const fields = Buffer.concat([
        ...[['S', 'FATAL'], ['V', 'FATAL'], ['C', '28P01'], ['M', 'password authentication failed for user "memstore"']].map(([type, value]) =>
          Buffer.concat([Buffer.from(type!), Buffer.from(`${value}\0`)]),
        ),
        Buffer.from([0]),
      ]);
      const header = Buffer.alloc(5);
      header.write('E', 0);
      header.writeInt32BE(fields.length + 4, 1);
      socket.end(Buffer.concat([header, fields]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `postgres://memstore:wrong-secret@127.0.0.1:${(server.address() as net.AddressInfo).port}/memstore`;
}

function expectOneLine(result: { code: number | string; lines: string[] }, pattern: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.lines, result.lines.join('\n')).toHaveLength(1);
  expect(result.lines[0]).toMatch(/^memstore cannot start: /);
  expect(result.lines[0]).toMatch(pattern);
  expect(result.lines[0]).not.toMatch(/\n|\s+at /);
}

describe('a server that cannot start', { timeout: 90_000 }, () => {
  it.runIf(postgresUrl)('names the PostgreSQL database that does not exist (3D000), and how to create it', async () => {
    const url = new URL(postgresUrl!);
    url.pathname = '/memstore_no_such_database';
    const result = await failedStart({ DATABASE_URL: url.toString() });
    expectOneLine(result, /The PostgreSQL database "memstore_no_such_database" does not exist on 127\.0\.0\.1:5432: create it \(createdb .*memstore_no_such_database\) or correct DATABASE_URL\.$/);
  });

  it.runIf(postgresUrl)("refuses to run its sessions under the announcement session's name (PGAPPNAME), whose transactions event readers pass over", async () => {
    const result = await failedStart({ DATABASE_URL: postgresUrl!, PGAPPNAME: ANNOUNCEMENTS_APPLICATION_NAME });
    expectOneLine(result, /memstore's database sessions would be named "memstore announcements", a name memstore keeps for its announcement session .*: set another application_name in DATABASE_URL, PGAPPNAME or the role's settings\.$/);
  });

  it('says the connection was refused, with the host and port it tried', async () => {
    const port = await freePort();
    const result = await failedStart({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test` });
    expectOneLine(result, new RegExp(`Cannot connect to PostgreSQL on 127\\.0\\.0\\.1:${port}: connection refused`));
  });

  it.runIf(postgresUrl)('says PostgreSQL refused a role that does not exist (28000)', async () => {
    const url = new URL(postgresUrl!);
    url.username = 'memstore_no_such_role';
    const result = await failedStart({ DATABASE_URL: url.toString() });
    expectOneLine(result, /PostgreSQL on 127\.0\.0\.1:5432 refused user "memstore_no_such_role" for database "[^"]+" \(role "memstore_no_such_role" does not exist\)/);
  });

  it('says PostgreSQL refused the password (28P01), without printing the password', async () => {
    const result = await failedStart({ DATABASE_URL: await passwordRefusingServer() });
    expectOneLine(result, /PostgreSQL on 127\.0\.0\.1:\d+ refused the password of user "memstore": correct the password in DATABASE_URL\.$/);
    expect(result.lines[0]).not.toContain('wrong-secret');
  });

  it('says the PGlite data dir is in use, and by which process', async () => {
    const dataDir = temporaryDir();
    const release = await lockDataDir(dataDir);
    try {
      const result = await failedStart({ MEMSTORE_DATA_DIR: dataDir });
      expectOneLine(result, new RegExp(`The data directory ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another memstore process \\(pid ${process.pid}\\)`));
    } finally {
      release();
    }
  });

  it('says the port is in use, and how to choose another', async () => {
    const occupier = net.createServer();
    await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
    const { port } = occupier.address() as net.AddressInfo;
    try {
      // The port is checked after the database opens; which database does not matter.
      const result = await failedStart({ PORT: String(port), HOST: '127.0.0.1', MEMSTORE_DATA_DIR: 'memory://' });
      expectOneLine(result, new RegExp(`Port ${port} on 127\\.0\\.0\\.1 is already in use by another process: stop it, or set PORT to a free port`));
    } finally {
      await new Promise((resolve) => occupier.close(resolve));
    }
  });
});

describe('the startup messages', () => {
  it('never show the password of DATABASE_URL, and default the database to the user name as PostgreSQL does', () => {
    expect(databaseTarget('postgres://alice:s3cret@db.example.com/')).toEqual({ host: 'db.example.com', port: '5432', database: 'alice', user: 'alice' });
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const wrapped = new Error('Failed query: select pg_advisory_lock($1)', { cause: refused });
    const message = describeDatabaseOpenFailure(wrapped, 'postgres://alice:s3cret@db.example.com:6543/app');
    expect(message).toBe('Cannot connect to PostgreSQL on db.example.com:6543: connection refused. Is PostgreSQL running and listening there? Check the host and port of DATABASE_URL.');
    expect(describeDatabaseOpenFailure(new AggregateError([refused]), 'postgres://a@h/d')).toMatch(/connection refused/);
  });

  it('leave other failures to the stack trace (bugs keep their stack)', () => {
    expect(describeDatabaseOpenFailure(new TypeError('undefined is not a function'), 'postgres://a@h/d')).toBeNull();
    expect(describeDatabaseOpenFailure(new Error('no such file'), undefined)).toBeNull();
  });
});
