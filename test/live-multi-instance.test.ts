import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '../src/domain/api-keys.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { eventsOf, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * Three server processes on one PostgreSQL database and one Redis are one system: a stream
 * on one sees the writes made through the others within a second; a key's rate limit and
 * stream count hold across all three; Redis going away fails no request.
 */
const PER_SECOND = 20;
const STREAMS_PER_KEY = 3;
const writer = generateToken();
const limited = generateToken();

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function post(url: string, token: string, query: string, variables: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: await response.json() };
}

describe.skipIf(postgresUrl === undefined)('three instances on one database and one Redis', () => {
  let drop: () => Promise<void>;
  let redis: ChildProcess;
  let redisExited: Promise<unknown>;
  const servers: ServerProcess[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    const database = await createScratchPostgresDatabase('memstore_instances');
    drop = database.drop;
    const redisPort = await freePort();
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    redisExited = new Promise((resolve) => redis.once('exit', resolve));
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let index = 0; index < 3; index += 1) {
      servers.push(
        startServerProcess({
          DATABASE_URL: database.url,
          REDIS_URL: `redis://127.0.0.1:${redisPort}`,
          MEMSTORE_BOOTSTRAP_KEYS: `shared:${writer},limited:${limited}`,
          MEMSTORE_RATE_LIMIT_PER_SECOND: String(PER_SECOND),
          MEMSTORE_RATE_LIMIT_BURST: String(PER_SECOND),
          MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY: String(STREAMS_PER_KEY),
          NODE_ENV: 'production',
        }),
      );
    }
    urls.push(...(await Promise.all(servers.map((server) => server.ready))));
  }, 60_000);

  afterAll(async () => {
    for (const server of servers) server.child.kill('SIGTERM');
    await Promise.all(servers.map((server) => server.exited));
    redis?.kill('SIGKILL');
    await drop?.();
  }, 30_000);

  it('delivers writes made through instances 2 and 3 to a stream on instance 1 within a second', async () => {
    const stream = await subscribeSse(fetch, urls[0]!, writer, SUBSCRIBE_EVENTS);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const latencies: number[] = [];
    for (const [index, url] of [urls[1]!, urls[2]!, urls[1]!, urls[2]!].entries()) {
      const { body } = await post(url, writer, `mutation($name: String!) { createMemoryStore(input: { name: $name }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }`, { name: `through ${index}` });
      const committed = performance.now();
      const [event] = eventsOf((await stream.waitFor(index + 1, 2000)).slice(index));
      latencies.push(performance.now() - committed);
      expect(event!.memoryStoreId).toBe(body.data.createMemoryStore.memoryStore.id);
    }
    expect(Math.max(...latencies)).toBeLessThan(1000);
    stream.close();
  });

  it(`shares a key's stream limit (${STREAMS_PER_KEY}) across the instances`, async () => {
    const open = [];
    for (const url of [urls[0]!, urls[1]!, urls[2]!]) open.push(await subscribeSse(fetch, url, writer, SUBSCRIBE_EVENTS));
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const stream of open) expect(stream.results).toEqual([]);
    const refused = await subscribeSse(fetch, urls[1]!, writer, SUBSCRIBE_EVENTS);
    expect((await refused.waitFor(1))[0]!.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    for (const stream of open) stream.close();
  });

  it(`holds a key to ${PER_SECOND} requests per second across the three (within 10 %), and serves every request while Redis stops`, async () => {
    const query = '{ memoryStores(first: 1) { totalCount } }';
    const statuses = new Map<number, number>();
    const hammer = async (url: string, until: number) => {
      while (performance.now() < until) {
        const { status } = await post(url, limited, query);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    // 4.9 s of requests from three clients to three instances: 5 windows of one second.
    const start = performance.now();
    await Promise.all(urls.flatMap((url) => [hammer(url, start + 4900), hammer(url, start + 4900)]));
    const admitted = statuses.get(200) ?? 0;
    const seconds = 5;
    expect(Math.abs(admitted - PER_SECOND * seconds) / (PER_SECOND * seconds)).toBeLessThanOrEqual(0.1);
    expect(statuses.get(429) ?? 0).toBeGreaterThan(admitted);
    expect([...statuses.keys()].filter((status) => status !== 200 && status !== 429)).toEqual([]);

    // Redis stops in the middle of a run: every request is still answered, none with a 5xx.
    statuses.clear();
    const until = performance.now() + 3000;
    const run = Promise.all(urls.map((url) => hammer(url, until)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    redis.kill('SIGKILL');
    await redisExited;
    await run;
    expect([...statuses.keys()].filter((status) => status >= 500)).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    // Writes and streams go on too.
    const { status, body } = await post(urls[2]!, writer, 'mutation { createMemoryStore(input: { name: "without redis" }) { __typename } }');
    expect(status).toBe(200);
    expect(body.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
    expect(servers.some((server) => server.stdout().includes('Redis is unreachable'))).toBe(true);
  }, 30_000);
});
