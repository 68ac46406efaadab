/**
 * The subscribers of `npm run bench:fan-out`, in a process of their own (so that reading a
 * thousand streams does not slow the writers' event loop). Arguments: the GraphQL URL, the
 * key, the number of streams (even: SSE, odd: graphql-ws). Prints "ready" once every stream
 * is open; then reads, from standard input, one JSON line `{ committed: { [versionId]: ms } }`
 * (times as `performance.timeOrigin + performance.now()`), and prints one JSON line with the
 * delivery latencies' quantiles and the deliveries missing, then exits.
 *
 * The readers are lean on purpose: node:http for SSE and `ws` for graphql-ws, one JSON.parse
 * per event, so that what is measured is the server.
 */
import http from 'node:http';
import readline from 'node:readline';
import WebSocket from 'ws';

const [url, token, countText] = process.argv.slice(2);
const COUNT = Number(countText);
const QUERY = 'subscription { memoryEvents { version { id } } }';
const now = () => performance.timeOrigin + performance.now();

/** Per stream: version id → arrival time. */
const arrivals: Map<string, number>[] = [];
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const closers: (() => void)[] = [];

function record(into: Map<string, number>, data: string): void {
  const versionId = (JSON.parse(data) as { data?: { memoryEvents?: { version?: { id?: string } } } }).data?.memoryEvents?.version?.id;
  if (versionId) into.set(versionId, now());
}

function openSse(into: Map<string, number>): Promise<void> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ query: QUERY });
    const request = http.request(url!, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}`, 'content-length': Buffer.byteLength(body) },
    });
    request.on('response', (response) => {
      if (response.statusCode !== 200) return reject(new Error(`SSE: HTTP ${response.statusCode}`));
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          if (message.startsWith('event: next\ndata: ')) record(into, message.slice('event: next\ndata: '.length));
        }
      });
      closers.push(() => request.destroy());
      resolve();
    });
    request.on('error', reject);
    request.end(body);
  });
}

function openWs(into: Map<string, number>): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url!.replace(/^http/, 'ws'), 'graphql-transport-ws');
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
    socket.on('message', (raw) => {
      const text = raw.toString();
      if (text.startsWith('{"id":"1","type":"next","payload":')) {
        record(into, text.slice('{"id":"1","type":"next","payload":'.length, -1));
        return;
      }
      const message = JSON.parse(text) as { type: string; payload?: unknown };
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: QUERY } }));
        // The server opens the stream as it handles the message: give it a moment.
        setTimeout(resolve, 5);
      } else if (message.type === 'next') {
        record(into, JSON.stringify((message as { payload: unknown }).payload));
      } else if (message.type === 'error') reject(new Error(`WebSocket: ${JSON.stringify(message.payload)}`));
    });
    socket.on('error', reject);
    closers.push(() => socket.terminate());
  });
}

for (let index = 0; index < COUNT; index += 1) {
  const into = new Map<string, number>();
  arrivals.push(into);
  await (index % 2 === 0 ? openSse(into) : openWs(into));
}
process.stdout.write('ready\n');

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const { committed } = JSON.parse(line) as { committed: Record<string, number> };
  const latencies: number[] = [];
  let missing = 0;
  for (const into of arrivals) {
    for (const [versionId, at] of Object.entries(committed)) {
      const arrival = into.get(versionId);
      if (arrival === undefined) missing += 1;
      else latencies.push(arrival - at);
    }
  }
  latencies.sort((a, b) => a - b);
  const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  process.stdout.write(`${JSON.stringify({ deliveries: latencies.length, missing, p50: quantile(0.5), p99: quantile(0.99), max: latencies.at(-1) ?? Number.NaN })}\n`);
  for (const close of closers) close();
  agent.destroy();
  process.exit(0);
}
