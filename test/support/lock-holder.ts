/**
 * A child process for test/data-dir-lock.test.ts. It reads commands on stdin, one per line:
 * `try <dir>` takes that data dir's lock and answers HELD or REFUSED <pid>; `hold <dir>`
 * does the same and keeps it until the process ends; `release` lets go of what it holds
 * and answers RELEASED. It answers READY once it has started.
 */
import readline from 'node:readline';
import { DataDirInUseError, lockDataDir } from '../../src/db/data-dir-lock.js';

let release: (() => void) | null = null;
const say = (line: string) => process.stdout.write(`${line}\n`);
say('READY');

for await (const line of readline.createInterface({ input: process.stdin })) {
  const [command, dir] = line.split(' ');
  if (command === 'release') {
    release?.();
    release = null;
    say('RELEASED');
    continue;
  }
  try {
    release = await lockDataDir(dir!);
    say('HELD');
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    say(`REFUSED ${/pid (\d+)/.exec(error.message)?.[1] ?? '?'}`);
  }
}
