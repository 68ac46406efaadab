/**
 * `npx tsx test/bench/telemetry-cost.ts [--requests N] [--rounds N]`: what metrics cost per
 * request. Not part of `npm test` (a script, not a timed test).
 *
 * 1. The hooks alone: the calls the pipeline makes for one request with metrics on
 *    (arrive, operation, one statement timed, depart with its counters and histograms),
 *    in a loop, against the same loop with telemetry off (the pipeline then calls nothing).
 * 2. Whole requests through `app.fetch` on an in-memory PGlite (a compiled read and a
 *    write): an app with metrics between two without, rounds alternating so that drift
 *    hits all alike; the two without show how much is noise.
 *
 * Prints nanoseconds (1.) and microseconds (2.) per request, and the load average, since
 * the machine may be shared.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createApp } from '../../src/app.js';
import { createDb } from '../../src/db/client.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { Metrics } from '../../src/http/metrics.js';
import type { RequestState } from '../../src/http/request-log.js';
import { createTelemetry } from '../../src/http/telemetry.js';

const { values: flags } = parseArgs({
  options: { requests: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '5' }, iterations: { type: 'string', default: '300000' } },
});
const requests = Number(flags.requests);
const rounds = Number(flags.rounds);
const iterations = Number(flags.iterations);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function hooksAlone(): { onNs: number; offNs: number } {
  const request = new Request('http://127.0.0.1:4000/graphql', { method: 'POST' });
  const response = new Response('{}', { status: 200 });
  const telemetry = createTelemetry(new Metrics(), null)!;
  const loop = (withTelemetry: boolean) => {
    const started = process.hrtime.bigint();
    for (let index = 0; index < iterations; index += 1) {
      const state: RequestState = { id: 'request', startedAt: performance.now() };
      if (withTelemetry) {
        telemetry.arrive(request, state);
        state.operationName = `Operation${index % 20}`;
        state.operationType = 'query';
        telemetry.operation(state);
        telemetry.statements(state)?.('select 1')();
        telemetry.depart(request, response, state);
      } else {
        state.operationName = `Operation${index % 20}`;
        state.operationType = 'query';
      }
    }
    return Number(process.hrtime.bigint() - started) / iterations;
  };
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < rounds + 1; round += 1) {
    const onNs = loop(true);
    const offNs = loop(false);
    // The first round warms the JIT.
    if (round > 0) {
      on.push(onNs);
      off.push(offNs);
    }
  }
  return { onNs: median(on), offNs: median(off) };
}

/**
 * Whole requests: two apps without metrics (A, B) and one with, on one database, in rounds of
 * A, on, B (then B, on, A): the two without measure the noise of a shared machine.
 */
async function wholeRequests(): Promise<Record<'read' | 'write', { on: number; offA: number; offB: number }>> {
  const database = await createDb({ databaseUrl: undefined, dataDir: 'memory://' });
  const token = generateToken();
  await ensureAdminKey(database.db, 'bench', token, new Date(), 'bench key');
  const app = (metrics: boolean) => createApp({ config: { nodeEnv: 'production', graphiql: false, ...(metrics ? { metrics: { token: null } } : {}) }, database });
  const apps = { offA: app(false), on: app(true), offB: app(false) };
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const read = JSON.stringify({ query: 'query Stores { memoryStores(first: 5) { totalCount edges { node { id name } } } }' });
  let written = 0;
  const run = async (target: ReturnType<typeof app>, kind: 'read' | 'write') => {
    const started = performance.now();
    for (let index = 0; index < requests; index += 1) {
      const body =
        kind === 'read'
          ? read
          : JSON.stringify({ query: 'mutation Create($name: String!) { createMemoryStore(input: { name: $name }) { __typename } }', variables: { name: `store ${(written += 1)}` } });
      const response = await target.fetch('http://127.0.0.1:4000/graphql', { method: 'POST', headers, body });
      if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    }
    return ((performance.now() - started) * 1000) / requests;
  };
  const results = {} as Record<'read' | 'write', { on: number; offA: number; offB: number }>;
  for (const kind of ['read', 'write'] as const) {
    const times = { offA: [] as number[], on: [] as number[], offB: [] as number[] };
    for (const name of ['offA', 'on', 'offB'] as const) await run(apps[name], kind);
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? (['offA', 'on', 'offB'] as const) : (['offB', 'on', 'offA'] as const);
      for (const name of order) times[name].push(await run(apps[name], kind));
    }
    results[kind] = { on: median(times.on), offA: median(times.offA), offB: median(times.offB) };
  }
  await database.close();
  return results;
}

const load = () => os.loadavg().map((value) => value.toFixed(2)).join(' ');
const loadBefore = load();
const hooks = hooksAlone();
process.stdout.write(
  `hooks alone (${iterations} requests × ${rounds} rounds, median): metrics on ${hooks.onNs.toFixed(0)} ns/request, off ${hooks.offNs.toFixed(0)} ns/request: +${(hooks.onNs - hooks.offNs).toFixed(0)} ns per request\n`,
);
const whole = await wholeRequests();
for (const [kind, { on, offA, offB }] of Object.entries(whole)) {
  const off = (offA + offB) / 2;
  process.stdout.write(
    `app.fetch on PGlite, ${kind} (${requests} requests × ${rounds} rounds, median): metrics on ${on.toFixed(1)} µs/request; ` +
      `off ${offA.toFixed(1)} and ${offB.toFixed(1)} µs/request (the two apps without metrics differ by ${((Math.abs(offA - offB) / off) * 100).toFixed(1)} %); on vs off ${(((on - off) / off) * 100).toFixed(1)} %\n`,
  );
}
process.stdout.write(`load average before ${loadBefore}, after ${load()} (${os.cpus().length} CPUs)\n`);
process.exit(0);
