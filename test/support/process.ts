import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/node-flags.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  /** Resolves with the GraphQL URL once the server logs that it listens; rejects if it exits first. */
  ready: Promise<string>;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  stdout(): string;
  stderr(): string;
}

/** How the server is run: by default `src/server.ts` as `npm start` runs it (test/node-flags.test.ts holds them equal). */
export const SOURCE_SERVER_COMMAND: readonly string[] = [process.execPath, ...NODE_FLAGS, '--import', 'tsx', 'src/server.ts'];

/** Runs the server (`command`, in the repository's root) with the given environment on top of a clean one. */
export function startServerProcess(env: Record<string, string>, command: readonly string[] = SOURCE_SERVER_COMMAND): ServerProcess {
  const [program, ...args] = command;
  const child = spawn(program!, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const ready = new Promise<string>((resolve, reject) => {
    // Looked for until found, in the text not yet searched (and the line it may have begun):
    // a server under load logs a line per request, and searching all of its output again on
    // every chunk costs the process that holds it time that grows with the square of the output.
    let searchedUpTo = 0;
    let listening = false;
    // Decoded as a stream, so that a character split between chunks arrives whole.
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      stdout += chunk;
      if (listening) return;
      const lineStart = stdout.lastIndexOf('\n', searchedUpTo - 1) + 1;
      const match = /"msg":"listening","url":"([^"]+)"/.exec(stdout.slice(lineStart));
      searchedUpTo = stdout.length;
      if (match) {
        listening = true;
        resolve(match[1]!);
      }
    });
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
    });
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening:\n${stderr}`)));
  });
  ready.catch(() => {});
  return { child, ready, exited, stdout: () => stdout, stderr: () => stderr };
}
