/**
 * `npm run bench`: memstore against a hand-written baseline on PostgreSQL.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- [options]
 *
 *   --duration S      measured seconds per workload and server (10)
 *   --warmup S        warm-up seconds before each measured run (3)
 *   --connections N   concurrent connections of the load generator (32)
 *   --only Q1,W1      run these workloads only (Q1 Q2 R2 Q3 S1 E1 W1 W2 F1)
 *   --fan-out-subscribers N  the open streams of F1, the fan-out of live updates (1000)
 *   --long            also run each workload for 2 minutes: req/s of the first 10 s vs the second minute
 *   --pglite          also run memstore on the embedded database (PGlite), seeded the same way
 *   --compare DIR     also measure the memstore of another checkout (DIR, with its own
 *                     node_modules: e.g. `git worktree add ../before HEAD~3 && (cd ../before
 *                     && npm ci)`) on the same data, right after this one, and report its ratios
 *   --without-lean-path  also measure this memstore with every request through Yoga
 *                     (compiled reads on): the lean path's gain, from the same run
 *   --without-metrics  also measure this memstore with /metrics off (what metrics cost, same run)
 *   --keep-database   keep database memstore_bench afterwards (dropped by default)
 *
 * memstore runs as in production: `npm run build` first, then `node <its flags>
 * dist/server.js`, with the flags its checkout's `npm start` gives (src/node-flags.ts; a
 * --compare checkout without a build script runs its src/server.ts through tsx).
 *
 * Creates database memstore_bench next to DATABASE_URL's, migrates and seeds it, checks
 * once per workload that memstore and the baseline return the same data, counts each
 * workload's SQL statements through a counting proxy, then measures each server alone.
 * Writes test/bench/results.md and results.json and prints the table.
 */
import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Database } from '../../src/db/client.js';
import * as schema from '../../src/db/schema.js';
import { BENCH_DATABASE, databaseUrlFor, dropDatabase, migrateAndSeed, recreateDatabase } from './database.js';
import { FAN_OUT_STORES, measureFanOut, type FanOutReport } from './fan-out-run.js';
import { cpuDelta, cpuOf, numberFlag, pinLoadGenerator, ROOT, rssBytes, runLoad, startServer, type ServerProcess } from './measure.js';
import { renderMarkdown, type LongRow, type PolledRow, type Results, type Row, type StatementRow } from './report.js';
import { BENCH_SHAPE, benchInvariantViolations } from './seed.js';
import { startStatementProxy, type StatementProxy } from './statement-proxy.js';
import { verifyWorkload } from './verify.js';
import { createWorkloads, DASHBOARD_BODY, polledDashboard, ShaTracker, WORKLOAD_NAMES, type TargetKind, type Workload, type WorkloadName } from './workloads.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    only: { type: 'string' },
    long: { type: 'boolean', default: false },
    pglite: { type: 'boolean', default: false },
    compare: { type: 'string' },
    'without-lean-path': { type: 'boolean', default: false },
    'without-metrics': { type: 'boolean', default: false },
    'keep-database': { type: 'boolean', default: false },
    'fan-out-subscribers': { type: 'string', default: '1000' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (flags.help) {
  const source = fs.readFileSync(new URL(import.meta.url), 'utf8');
  process.stdout.write(`${/\/\*\*([\s\S]*?)\*\//.exec(source)![1]!.replace(/^ \* ?/gm, '')}\n`);
  process.exit(0);
}

const duration = numberFlag('duration', flags.duration, 'positive');
const warmup = numberFlag('warmup', flags.warmup, 'non-negative');
const connections = Math.round(numberFlag('connections', flags.connections, 'positive'));
/** The fan-out of live updates (fan-out-run.ts): measured on a database of its own, after the others. */
const FAN_OUT = 'F1';
const KNOWN = [...WORKLOAD_NAMES, FAN_OUT] as const;
const selected: string[] = flags.only
  ? flags.only.split(',').map((name) => name.trim().toUpperCase()).filter((name) => name !== '').map((name) => {
      if (!(KNOWN as readonly string[]).includes(name)) {
        process.stderr.write(`--only: unknown workload "${name}" (known: ${KNOWN.join(', ')})\n`);
        process.exit(2);
      }
      return name;
    })
  : [...KNOWN];
const fanOutSubscribers = Math.round(numberFlag('fan-out-subscribers', flags['fan-out-subscribers'], 'positive'));
// Reads first: the writes change what the reads would return.
const workloadNames = WORKLOAD_NAMES.filter((name) => selected.includes(name));
const runFanOut = selected.includes(FAN_OUT);

const compareDir = flags.compare ? path.resolve(flags.compare) : null;
if (compareDir && !fs.existsSync(path.join(compareDir, 'src', 'server.ts'))) {
  process.stderr.write(`--compare: ${compareDir} holds no src/server.ts (a checkout of memstore, with node_modules)\n`);
  process.exit(2);
}

const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  process.stderr.write('npm run bench needs DATABASE_URL (PostgreSQL), e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench\n');
  process.exit(2);
}
const benchUrl = databaseUrlFor(adminUrl, BENCH_DATABASE);

const LONG_SECONDS = 120;
/** The concurrent writers of F1 (as many as W1's requests in flight, per server core). */
const FAN_OUT_WRITERS = 16;
const COUNTED_REQUESTS = 20;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const token = `msk_${Array.from({ length: 40 }, () => BASE62[randomInt(62)]).join('')}`;
// memstore runs as an operator would run it: /metrics on (guarded by a token), tracing off.
const metricsToken = Array.from({ length: 32 }, () => BASE62[randomInt(62)]).join('');

const log = (message: string) => process.stdout.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

const servers: ServerProcess[] = [];
let proxy: StatementProxy | null = null;
let probe: postgres.Sql | null = null;
let pgliteDir: string | null = null;

async function cleanUp(): Promise<void> {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  await proxy?.close();
  proxy = null;
  await probe?.end({ timeout: 5 });
  probe = null;
  if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
  pgliteDir = null;
}

process.on('SIGINT', () => {
  void cleanUp().finally(() => process.exit(130));
});

function memstoreEnvironment(extra: Record<string, string>): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
    MEMSTORE_BOOTSTRAP_KEYS: `bench:${token}`,
    MEMSTORE_METRICS_TOKEN: metricsToken,
    // BENCH_MEMSTORE_ENV="NAME=value …": more environment for every memstore process.
    ...Object.fromEntries((process.env.BENCH_MEMSTORE_ENV ?? '').split(' ').filter(Boolean).map((pair) => pair.split(/=(.*)/s, 2))),
    ...extra,
  };
}

async function start(
  name: string,
  kind: TargetKind,
  databaseUrl: string | undefined,
  core: number | null,
  variant: { dataDir?: string; cwd?: string; script?: string; metrics?: boolean } = {},
): Promise<ServerProcess> {
  const { dataDir, cwd, script = serverScript(cwd ?? ROOT), metrics = true } = variant;
  const environment = memstoreEnvironment(databaseUrl ? { DATABASE_URL: databaseUrl } : { MEMSTORE_DATA_DIR: dataDir! });
  if (!metrics) delete environment.MEMSTORE_METRICS_TOKEN;
  const server =
    kind === 'memstore'
      ? await startServer(name, script, environment, core, cwd)
      : await startServer(name, 'test/bench/baseline.ts', { DATABASE_URL: databaseUrl! }, core);
  servers.push(server);
  return server;
}

/** BENCH_MEMORY_TRACE: logs a memstore process's RSS and heap (from its /metrics), in MB. */
async function logMemory(server: ServerProcess): Promise<void> {
  const text = await (await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
  const mb = (bytes: string | undefined) => (bytes === undefined ? '?' : (Number(bytes) / 2 ** 20).toFixed(1));
  const gauge = (name: string) => mb(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)$/gm)].map((match) => `${match[1]} ${mb(match[2])}`);
  log(`memory: RSS ${mb(String(rssBytes(server.pid) ?? 0))}, heap used ${gauge('nodejs_heap_size_used_bytes')} of ${gauge('nodejs_heap_size_total_bytes')} (${spaces.join(', ')}), external ${gauge('nodejs_external_memory_bytes')}`);
}

async function stop(server: ServerProcess): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  await server.stop();
}

async function send(server: ServerProcess, workload: Workload, kind: TargetKind): Promise<boolean> {
  const spec = workload.next(kind);
  const response = await fetch(`${server.baseUrl}${spec.path}`, {
    method: spec.method ?? 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: spec.body,
  });
  return spec.done(response.status, await response.text());
}

/** Builds a checkout for production when it can; the script memstore then runs from (dist/server.js, or src/server.ts). */
function buildForProduction(directory: string): void {
  const manifest = JSON.parse(fs.readFileSync(path.join(directory, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  if (!manifest.scripts?.build) return;
  log(`npm run build in ${directory}`);
  execFileSync('npm', ['run', 'build'], { cwd: directory, stdio: 'ignore' });
}

function serverScript(directory: string): string {
  return fs.existsSync(path.join(directory, 'dist', 'server.js')) ? 'dist/server.js' : 'src/server.ts';
}

/** The commit a checkout runs, read when the run starts ("+changes" when src/ differs from it). */
function currentCommit(directory = ROOT): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: directory, encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--', 'src', 'package.json'], { cwd: directory, encoding: 'utf8' }).trim() !== '';
    return changed ? `${commit}+changes` : commit;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const loadAverageAtStart = os.loadavg().map((value) => value.toFixed(2)).join(' ');
  const commit = currentCommit();
  const pinning = pinLoadGenerator();
  log(`${pinning.note}`);
  buildForProduction(ROOT);
  if (compareDir) buildForProduction(compareDir);
  log(`workloads ${workloadNames.join(', ')}; ${duration} s after ${warmup} s warm-up; ${connections} connections${flags.long ? '; --long' : ''}${flags.pglite ? '; --pglite' : ''}`);

  log(`creating database ${BENCH_DATABASE}, migrating and seeding ${BENCH_SHAPE.stores} stores × ${BENCH_SHAPE.memoriesPerStore} memories × ${BENCH_SHAPE.versionsPerMemory} versions`);
  await recreateDatabase(adminUrl!, BENCH_DATABASE);
  const seeded = await migrateAndSeed({ databaseUrl: benchUrl, dataDir: 'memory://', token });
  log(`seeded PostgreSQL in ${seeded.seconds.toFixed(1)} s`);

  probe = postgres(benchUrl, { max: 1, onnotice: () => {} });
  const probeDb = drizzle({ client: probe, schema }) as unknown as Database;
  const [{ version: postgresVersion }] = (await probe`select current_setting('server_version') as version`) as unknown as [{ version: string }];
  const tracker = new ShaTracker();
  const workloads = createWorkloads(tracker);

  // ---- 1. Same answers, and statements per request (both through the counting proxy) ----
  const upstream = new URL(benchUrl);
  proxy = await startStatementProxy(upstream.hostname, Number(upstream.port || 5432));
  const proxiedUrl = new URL(benchUrl);
  proxiedUrl.hostname = '127.0.0.1';
  proxiedUrl.port = String(proxy.port);
  const countingMemstore = await start('memstore (counting)', 'memstore', proxiedUrl.toString(), pinning.serverCore);
  const countingBaseline = await start('baseline (counting)', 'baseline', proxiedUrl.toString(), pinning.serverCore);
  const verification: Record<string, string> = {};
  const statements: StatementRow[] = [];
  for (const name of workloadNames) {
    verification[name] = await verifyWorkload(name, { memstore: countingMemstore.baseUrl, baseline: countingBaseline.baseUrl, token }, probeDb, seeded.apiKeyId);
    log(`verified ${verification[name]}`);
    for (const [kind, server] of [['memstore', countingMemstore], ['baseline', countingBaseline]] as const) {
      const workload = workloads[name];
      workload.startRun(`count-${kind}-${Date.now().toString(36)}`);
      if (workload.write) await tracker.load(probeDb);
      // Warm: connections opened, statements prepared, type catalogue fetched.
      for (let index = 0; index < 5; index += 1) await send(server, workload, kind);
      proxy.reset();
      let failed = 0;
      for (let index = 0; index < COUNTED_REQUESTS; index += 1) if (!(await send(server, workload, kind))) failed += 1;
      // Let the last statements' bytes reach the proxy's counters.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const counts = proxy.counts();
      if (failed > 0) throw new Error(`${name} on ${kind}: ${failed} of ${COUNTED_REQUESTS} counted requests failed`);
      statements.push({
        workload: name,
        target: kind,
        perRequest: counts.statements / COUNTED_REQUESTS,
        transactionControlPerRequest: counts.transactionControl / COUNTED_REQUESTS,
        parsesPerRequest: counts.parses / COUNTED_REQUESTS,
        roundTripsPerRequest: counts.roundTrips / COUNTED_REQUESTS,
        byText: [...counts.byText].sort((a, b) => b[1] - a[1]).map(([text, count]) => ({ text, perRequest: count / COUNTED_REQUESTS })),
      });
      log(`${name} ${kind}: ${(counts.statements / COUNTED_REQUESTS).toFixed(2)} statements, ${(counts.roundTrips / COUNTED_REQUESTS).toFixed(2)} round trips per request`);
    }
  }
  await stop(countingMemstore);
  await stop(countingBaseline);
  await proxy.close();
  proxy = null;

  // ---- 2. Measured runs, one server loaded at a time ----
  const memstore = await start('memstore', 'memstore', benchUrl, pinning.serverCore);
  const baseline = await start('baseline', 'baseline', benchUrl, pinning.serverCore);
  const compareCommit = compareDir ? currentCommit(compareDir) : null;
  // Further memstore arms, measured right after memstore on the same data.
  const variants: { server: ServerProcess; target: Row['target'] }[] = [];
  if (compareDir) variants.push({ server: await start(`memstore at ${compareCommit}`, 'memstore', benchUrl, pinning.serverCore, { cwd: compareDir }), target: 'memstore-compared' });
  if (flags['without-lean-path']) {
    const server = await start('memstore without the lean path', 'memstore', benchUrl, pinning.serverCore, { script: 'test/bench/memstore-without-lean-path.mjs' });
    variants.push({ server, target: 'memstore-without-lean-path' });
  }
  if (flags['without-metrics']) {
    const server = await start('memstore without metrics', 'memstore', benchUrl, pinning.serverCore, { metrics: false });
    variants.push({ server, target: 'memstore-without-metrics' });
  }
  const rows: Row[] = [];
  const longRows: LongRow[] = [];

  const backendPids = async () =>
    (await probe!`select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`).map(
      (row) => row.pid as number,
    );

  const measure = async (server: ServerProcess, kind: TargetKind, workload: Workload, seconds: number, database: 'postgres' | 'pglite') => {
    const tag = `${kind}-${database}-${seconds}s-${Date.now().toString(36)}`;
    workload.startRun(tag);
    if (workload.write && database === 'postgres') await tracker.load(probeDb);
    if (warmup > 0) await runLoad({ baseUrl: server.baseUrl, token, workload, kind, connections, seconds: warmup });
    if (workload.write && database === 'postgres') {
      // autocannon drops the requests in flight when the warm-up ends: their writes commit
      // but their new shas never reach the tracker. Let them finish, then read the shas again.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await tracker.load(probeDb);
    }
    const databasePidsBefore = database === 'postgres' ? await backendPids() : [];
    const databaseBefore = cpuOf(databasePidsBefore);
    const serverBefore = cpuOf([server.pid]);
    const rssStart = rssBytes(server.pid) ?? 0;
    let rssMax = rssStart;
    const loadStartedAt = Date.now();
    let rssAtTenSeconds: number | null = null;
    const sampler = setInterval(() => {
      const rss = rssBytes(server.pid) ?? 0;
      rssMax = Math.max(rssMax, rss);
      if (rssAtTenSeconds === null && Date.now() - loadStartedAt >= 10_000) rssAtTenSeconds = rss;
    }, 250);
    const memoryTrace = process.env.BENCH_MEMORY_TRACE && kind === 'memstore' && seconds === LONG_SECONDS ? setInterval(() => void logMemory(server), 10_000) : null;
    if (memoryTrace) void logMemory(server);
    const load = await runLoad({ baseUrl: server.baseUrl, token, workload, kind, connections, seconds });
    clearInterval(sampler);
    if (memoryTrace) {
      clearInterval(memoryTrace);
      await logMemory(server);
    }
    const serverCpu = cpuDelta(serverBefore, cpuOf([server.pid]));
    const rssEnd = rssBytes(server.pid) ?? 0;
    rssMax = Math.max(rssMax, rssEnd);
    const databaseCpu = database === 'postgres' ? cpuDelta(databaseBefore, cpuOf([...new Set([...databasePidsBefore, ...(await backendPids())])])) : null;
    const requests = Math.max(load.requests, 1);
    const counted = database === 'postgres' ? statements.find((entry) => entry.workload === workload.name && entry.target === kind) : undefined;
    return {
      load,
      row: {
        workload: workload.name,
        target: (database === 'pglite' ? 'memstore-pglite' : (variants.find((variant) => variant.server === server)?.target ?? kind)) as Row['target'],
        requestsPerSecond: load.requestsPerSecond,
        p50: load.p50,
        p99: load.p99,
        requests: load.requests,
        failed: load.failed,
        errors: load.errors,
        statementsPerRequest: counted?.perRequest ?? null,
        roundTripsPerRequest: counted?.roundTripsPerRequest ?? null,
        serverCpuMsPerRequest: serverCpu / requests,
        databaseCpuMsPerRequest: databaseCpu === null ? null : databaseCpu / requests,
        maxRssMb: rssMax / 2 ** 20,
      } satisfies Row,
      rssStartMb: rssStart / 2 ** 20,
      rssAtTenSecondsMb: (rssAtTenSeconds ?? rssEnd) / 2 ** 20,
      rssEndMb: rssEnd / 2 ** 20,
    };
  };

  // ---- Q1 polled while nothing changes: the conditional request (memstore only), right after Q1 ----
  let polled: PolledRow | null = null;
  const measurePolled = async () => {
    const dashboard = (headers: Record<string, string> = {}) =>
      fetch(`${memstore.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers }, body: DASHBOARD_BODY });
    // A tag is withheld while a write that began before the newest change may still commit: wait for one.
    let tag: string | null = null;
    for (let attempt = 0; attempt < 50 && tag === null; attempt += 1) {
      const first = await dashboard();
      tag = first.headers.get('etag');
      await first.arrayBuffer();
      if (first.status !== 200) throw new Error(`Q1 polled: the dashboard answered ${first.status}`);
      if (tag === null) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (tag === null) throw new Error('Q1 polled: the dashboard had no ETag within 5 s');
    const again = await dashboard({ 'if-none-match': tag });
    if (again.status !== 304 || (await again.text()) !== '') throw new Error(`Q1 polled: If-None-Match with the answer's ETag answered ${again.status}, not an empty 304`);
    verification.Q1polled = `the dashboard's ETag ${tag.slice(0, 12)}… named in If-None-Match: 304 with no body`;
    const { row } = await measure(memstore, 'memstore', polledDashboard(tag), duration, 'postgres');
    const q1 = rows.find((candidate) => candidate.workload === 'Q1' && candidate.target === 'memstore')!;
    polled = { ...row, statementsPerRequest: null, roundTripsPerRequest: null, ratioToQ1: row.requestsPerSecond / q1.requestsPerSecond };
    log(`Q1 polled unchanged (304): ${row.requestsPerSecond.toFixed(0)} req/s (${polled.ratioToQ1.toFixed(1)} × Q1), p50 ${row.p50} ms, p99 ${row.p99} ms${row.failed + row.errors > 0 ? `, ${row.failed} failed, ${row.errors} errors` : ''}`);
  };

  for (const name of workloadNames) {
    const workload = workloads[name];
    const targets = [['baseline', baseline], ['memstore', memstore], ...variants.map((variant) => ['memstore', variant.server] as const)] as const;
    for (const [kind, server] of targets) {
      const { row } = await measure(server, kind, workload, duration, 'postgres');
      rows.push(row);
      log(`${name} ${server.name}: ${row.requestsPerSecond.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${row.serverCpuMsPerRequest.toFixed(2)} CPU ms/req${row.failed + row.errors > 0 ? `, ${row.failed} failed, ${row.errors} errors` : ''}`);
    }
    if (name === 'Q1') await measurePolled();
    if (flags.long) {
      for (const [kind, server] of [['baseline', baseline], ['memstore', memstore]] as const) {
        const { load, rssStartMb, rssAtTenSecondsMb, rssEndMb } = await measure(server, kind, workload, LONG_SECONDS, 'postgres');
        longRows.push(longRow(name, kind, load.perSecond, load.failed + load.errors, { rssStartMb, rssAtTenSecondsMb, rssEndMb }));
        const last = longRows.at(-1)!;
        log(
          `${name} ${kind} (2 min): first 10 s ${last.firstTenSeconds.toFixed(0)} req/s, second minute ${last.secondMinute.toFixed(0)} req/s, ` +
            `RSS ${rssStartMb.toFixed(0)} → ${rssAtTenSecondsMb.toFixed(0)} (10 s) → ${rssEndMb.toFixed(0)} MB`,
        );
      }
    }
  }
  const telemetry = await metricsSeen(memstore);
  log(`memstore: ${telemetry}`);
  await stop(memstore);
  await stop(baseline);
  for (const variant of variants) await stop(variant.server);
  const violations = await benchInvariantViolations(probeDb);
  if (violations.length > 0) throw new Error(`Invariants broken after the measured runs:\n${violations.join('\n')}`);
  log('invariants hold after the measured runs (counters exact, every memory equals its newest version)');
  await probe.end({ timeout: 5 });
  probe = null;

  // ---- 3. memstore on PGlite (no baseline: the baseline needs PostgreSQL's wire protocol) ----
  let pgliteSeedSeconds: number | null = null;
  if (flags.pglite) {
    pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-bench-pglite-'));
    log(`seeding PGlite in ${pgliteDir}`);
    const pgliteSeed = await migrateAndSeed({ databaseUrl: undefined, dataDir: pgliteDir, token, afterSeed: (db) => tracker.load(db) });
    pgliteSeedSeconds = pgliteSeed.seconds;
    log(`seeded PGlite in ${pgliteSeed.seconds.toFixed(1)} s`);
    const embedded = await start('memstore (PGlite)', 'memstore', undefined, pinning.serverCore, { dataDir: pgliteDir });
    for (const name of workloadNames) {
      if (!workloads[name].write) log(`PGlite ${await verifyWorkload(name, { memstore: embedded.baseUrl, token }, null, pgliteSeed.apiKeyId)}`);
      const { row } = await measure(embedded, 'memstore', workloads[name], duration, 'pglite');
      rows.push(row);
      log(`${name} memstore on PGlite: ${row.requestsPerSecond.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.failed + row.errors > 0 ? `, ${row.failed} failed, ${row.errors} errors` : ''}`);
    }
    await stop(embedded);
    fs.rmSync(pgliteDir, { recursive: true, force: true });
    pgliteDir = null;
  }

  if (!flags['keep-database']) await dropDatabase(adminUrl!, BENCH_DATABASE);

  // ---- 4. the fan-out of live updates: W1-style writes alone, then with streams open ----
  let fanOut: FanOutReport | null = null;
  if (runFanOut) {
    log(`F1: ${fanOutSubscribers} streams while ${FAN_OUT_WRITERS} writers update memories of ${FAN_OUT_STORES} stores (${duration} s alone, ${duration} s with the streams)`);
    fanOut = await measureFanOut({ adminUrl: adminUrl!, subscribers: fanOutSubscribers, seconds: duration, writers: FAN_OUT_WRITERS, pinning });
    log(
      `F1: ${fanOut.writesPerSecondWithSubscribers} writes/s with the streams, ${fanOut.writesPerSecondAlone} alone (${fanOut.throughputRatio.toFixed(2)} ×); ` +
        `delivery p50 ${fanOut.latencyMs.p50} ms, p99 ${fanOut.latencyMs.p99} ms; ${fanOut.missingDeliveries} missing`,
    );
  }

  const results: Results = {
    date: new Date(startedAt).toISOString(),
    commit,
    comparedCommit: compareCommit,
    node: process.version,
    postgres: postgresVersion,
    cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown CPU'}`,
    loadAverage: os.loadavg().map((value) => value.toFixed(2)).join(' '),
    loadAverageAtStart,
    telemetry,
    pinning: pinning.note,
    durationSeconds: duration,
    warmupSeconds: warmup,
    connections,
    shape: BENCH_SHAPE,
    seedSeconds: seeded.seconds,
    pgliteSeedSeconds,
    workloads: workloadNames.map((name) => ({ name, title: workloads[name].title })),
    verification,
    statements,
    rows,
    longRows,
    fanOut,
    polled,
    totalSeconds: (Date.now() - startedAt) / 1000,
  };
  const markdown = renderMarkdown(results);
  const directory = path.join(ROOT, 'test', 'bench');
  fs.writeFileSync(path.join(directory, 'results.md'), markdown);
  fs.writeFileSync(path.join(directory, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\n${markdown}\n`);
  log(`done in ${results.totalSeconds.toFixed(0)} s; wrote test/bench/results.md and results.json`);
}

/** What memstore's /metrics counted over the measured runs: proof that metrics were on. */
async function metricsSeen(server: ServerProcess): Promise<string> {
  const response = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  if (response.status !== 200) return `/metrics answered ${response.status} (metrics off?)`;
  const text = await response.text();
  const total = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(name))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return `metrics on (MEMSTORE_METRICS_TOKEN; /metrics counted ${total('memstore_graphql_requests_total')} GraphQL requests and ${total('memstore_db_statement_duration_seconds_count')} statements), tracing off`;
}

function longRow(workload: WorkloadName, target: TargetKind, perSecond: number[], failed: number, rss: Pick<LongRow, 'rssStartMb' | 'rssAtTenSecondsMb' | 'rssEndMb'>): LongRow {
  const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length);
  return {
    workload,
    target,
    firstTenSeconds: mean(perSecond.slice(0, 10)),
    secondMinute: mean(perSecond.slice(60, 120)),
    overall: mean(perSecond.slice(0, LONG_SECONDS)),
    failed,
    ...rss,
  };
}

main()
  .catch(async (error: unknown) => {
    process.stderr.write(`\nbench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    for (const server of servers) process.stderr.write(`\n--- last output of ${server.name} ---\n${server.output().slice(-3000)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanUp();
    process.exit();
  });
