/** Processes, CPU pinning, /proc readings and the autocannon runs of the benchmark. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { RequestSpec, TargetKind, Workload } from './workloads.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A numeric command-line flag of the benchmark's scripts: its value, or, when it breaks the
 * rule, a message and exit code 2. `whole`: a whole number of at least 1.
 */
export function numberFlag(name: string, text: string, rule: 'positive' | 'non-negative' | 'whole'): number {
  const value = Number(text);
  const valid = rule === 'whole' ? Number.isInteger(value) && value >= 1 : Number.isFinite(value) && (rule === 'positive' ? value > 0 : value >= 0);
  if (!valid) {
    process.stderr.write(rule === 'whole' ? `--${name} must be a whole number of at least 1 (got "${text}")\n` : `--${name} must be a ${rule} number, not "${text}"\n`);
    process.exit(2);
  }
  return value;
}

// ---------------------------------------------------------------------------------------
// CPU pinning

export interface Pinning {
  /** The core the servers run on, or null when not pinned. */
  serverCore: number | null;
  /** The core the load generator (this process) runs on, or null. */
  loadCore: number | null;
  note: string;
}

function affinityMask(pid: number): bigint | null {
  try {
    const output = execFileSync('taskset', ['-p', String(pid)], { encoding: 'utf8' });
    const match = /affinity mask:\s*([0-9a-f]+)/i.exec(output);
    return match ? BigInt(`0x${match[1]}`) : null;
  } catch {
    return null;
  }
}

/** Pins this process (the load generator) to core 0 and reserves core 1 for the servers, when taskset and two usable cores exist. */
export function pinLoadGenerator(): Pinning {
  const mask = affinityMask(process.pid);
  if (mask === null) return { serverCore: null, loadCore: null, note: 'taskset unavailable: processes not pinned' };
  if (os.availableParallelism() < 2 || (mask & 3n) !== 3n) {
    return { serverCore: null, loadCore: null, note: `fewer than 2 usable cores (affinity mask ${mask.toString(16)}): processes not pinned` };
  }
  execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  return { serverCore: 1, loadCore: 0, note: 'autocannon (this process) on core 0, the servers on core 1; PostgreSQL not pinned' };
}

// ---------------------------------------------------------------------------------------
// Server processes

export interface ServerProcess {
  name: string;
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  output(): string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The flags `npm start` gives `node` in a checkout (this one's: src/node-flags.ts): a
 * `--compare` checkout runs with its own commit's flags, none before they existed.
 */
export function startFlagsOf(directory: string): string[] {
  let start = '';
  try {
    start = (JSON.parse(fs.readFileSync(path.join(directory, 'package.json'), 'utf8')) as { scripts?: { start?: string } }).scripts?.start ?? '';
  } catch {
    return [];
  }
  const words = start.split(/\s+/);
  const flags: string[] = [];
  for (let index = words.indexOf('node') + 1; index > 0 && index < words.length; index += 1) {
    const word = words[index]!;
    if (word === '--import') index += 1;
    else if (word.startsWith('--')) flags.push(word);
    else break;
  }
  return flags;
}

/**
 * The arguments of `node` for a server of the benchmark: memstore with the flags its
 * checkout's `npm start` gives (startFlagsOf), as its production command does. A built script
 * (dist/*.js) runs on plain Node, as in production; TypeScript through tsx. BENCH_PERF=1:
 * every server writes /tmp/perf-<pid>.map, so that `perf record -p <pid>` names its JavaScript.
 */
export function nodeArgumentsOf(name: string, script: string, cwd = ROOT): string[] {
  const memstore = name.startsWith('memstore');
  return [
    ...(memstore ? startFlagsOf(cwd) : []),
    ...(process.env.BENCH_CPU_PROF && memstore ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_CPU_PROF] : []),
    ...(process.env.BENCH_PERF ? ['--perf-basic-prof'] : []),
    ...(process.env.BENCH_MEMSTORE_NODE_ARGS && memstore ? process.env.BENCH_MEMSTORE_NODE_ARGS.split(' ') : []),
    ...(script.endsWith('.ts') ? ['--import', 'tsx'] : []),
    script,
  ];
}

/**
 * Starts `node <nodeArgumentsOf> <script>` in `cwd` (under `taskset -c <core>` when pinning) with a
 * clean environment plus `env`, and waits until GET /healthz answers 200.
 */
export async function startServer(name: string, script: string, env: Record<string, string>, core: number | null, cwd = ROOT): Promise<ServerProcess> {
  const port = await freePort();
  const nodeArguments = nodeArgumentsOf(name, script, cwd);
  const [command, args] = core === null ? [process.execPath, nodeArguments] : ['taskset', ['-c', String(core), process.execPath, ...nodeArguments]];
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const serverLog = process.env.BENCH_SERVER_LOG && name.startsWith('memstore') ? fs.createWriteStream(process.env.BENCH_SERVER_LOG, { flags: 'a' }) : null;
  child.stdout!.on('data', (chunk: Buffer) => {
    serverLog?.write(chunk);
    output = (output + chunk.toString()).slice(-20_000);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    serverLog?.write(chunk);
    output = (output + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (gone) throw new Error(`${name} exited before it was ready:\n${output}`);
    try {
      const response = await fetch(`${baseUrl}/healthz`);
      if (response.status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} was not ready within 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    name,
    child,
    pid: child.pid!,
    baseUrl,
    output: () => output,
    stop: async () => {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------------------------------
// /proc

const CLOCK_TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process in milliseconds, or null when it cannot be read. */
export function cpuMilliseconds(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the state field.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Resident set size in bytes, or null. */
export function rssBytes(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU milliseconds of each process, for deltas over a run (processes that are gone read as missing). */
export function cpuOf(pids: readonly number[]): Map<number, number> {
  const readings = new Map<number, number>();
  for (const pid of pids) {
    const value = cpuMilliseconds(pid);
    if (value !== null) readings.set(pid, value);
  }
  return readings;
}

/** The CPU the processes used between two readings (a process born in between counts from zero). */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, value] of after) total += value - (before.get(pid) ?? 0);
  return total;
}

// ---------------------------------------------------------------------------------------
// Load

export interface LoadOptions {
  baseUrl: string;
  token: string;
  workload: Workload;
  kind: TargetKind;
  connections: number;
  seconds: number;
  /** Called once per second of the run with the responses completed in that second. */
  onSecond?: (responses: number) => void;
}

export interface LoadResult {
  seconds: number;
  requests: number;
  /** Responses that were not the expected success (non-2xx, GraphQL errors, failed writes). */
  failed: number;
  /** Socket errors and timeouts. */
  errors: number;
  requestsPerSecond: number;
  /** Null when no request completed. */
  p50: number | null;
  p99: number | null;
  perSecond: number[];
}

/** Runs autocannon against one server for a fixed time; each request comes from the workload's generator. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { workload, kind } = options;
  let failed = 0;
  let completed = 0;
  const perSecond: number[] = [];
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.baseUrl,
        connections: options.connections,
        duration: options.seconds,
        pipelining: 1,
        timeout: 30,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
        requests: [
          {
            method: 'POST',
            setupRequest: (request, context) => {
              const spec: RequestSpec = workload.next(kind);
              (context as { spec?: RequestSpec }).spec = spec;
              return { ...request, method: spec.method ?? 'POST', path: spec.path, body: spec.body, ...(spec.headers ? { headers: { ...request.headers, ...spec.headers } } : {}) };
            },
            onResponse: (status, body, context) => {
              const spec = (context as { spec?: RequestSpec }).spec;
              if (!spec || !spec.done(status, body)) failed += 1;
            },
          },
        ],
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
    instance.on('response', () => {
      completed += 1;
    });
    let last = 0;
    const ticker = setInterval(() => {
      perSecond.push(completed - last);
      options.onSecond?.(completed - last);
      last = completed;
    }, 1000);
    instance.on('done', () => clearInterval(ticker));
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    seconds,
    requests: result.requests.total,
    failed,
    errors: result.errors + result.timeouts,
    requestsPerSecond: result.requests.total / (result.duration || options.seconds),
    p50: result.requests.total > 0 ? result.latency.p50 : null,
    p99: result.requests.total > 0 ? result.latency.p99 : null,
    perSecond,
  };
}
