/**
 * The subscribers of the fan-out benchmark, in a process of their own (so that reading a
 * thousand streams does not slow the writers' event loop). Arguments: the GraphQL URL, the
 * key, the number of streams (even: SSE, odd: graphql-ws). Prints "ready" once every stream
 * is open; then reads, from standard input, one JSON line `{ committed: { [versionId]: ms } }`
 * (times as `performance.timeOrigin + performance.now()`), and prints one JSON line with the
 * delivery latencies' quantiles and the deliveries missing, then exits.
 *
 * The readers are as lean as a reader can be, because they share a core with the writers and
 * read a thousand times what the server writes: each stream is a plain socket with its
 * request (SSE) or upgrade and client frames (graphql-ws) written by hand, and each event's
 * version id is found in the bytes as they arrive, without decoding HTTP chunks or
 * WebSocket frames. The test suite checks what the frames hold (test/live-*.test.ts); this
 * counts arrivals.
 */
import { randomBytes } from 'node:crypto';
import net, { type Socket } from 'node:net';
import readline from 'node:readline';
import { percentile } from '../support/percentile.js';

const [url, token, countText] = process.argv.slice(2);
const COUNT = Number(countText);
const QUERY = 'subscription { memoryEvents { version { id } } }';
const now = () => performance.timeOrigin + performance.now();

const MARK = Buffer.from('"version":{"id":"');
const QUOTE = 0x22;

/** Version ids seen by any stream, each with its index in every stream's arrival times. */
const versionIndex = new Map<string, number>();
/** The same ids' bytes, by index: in the order the first stream to see each read it. */
const order: Buffer[] = [];
/** Chunks read, all streams together (how often the server wrote to each socket). */
let chunks = 0;

/** Whether `bytes` holds `expected` at `offset`. */
function holdsAt(bytes: Buffer, offset: number, expected: Buffer): boolean {
  if (offset < 0 || offset + expected.length > bytes.length) return false;
  for (let index = 0; index < expected.length; index += 1) if (bytes[offset + index] !== expected[index]) return false;
  return true;
}

/**
 * One stream's arrival times, by version index (NaN: not arrived).
 *
 * Every stream reads the same events in the same order (one workspace, commit order), so a
 * stream looks first for the id it expects next (the one after the last it read, in the order
 * the first stream to see them read them) where it expects it (as far past the last as the
 * last was past the one before): bytes compared, no search, no string. Anything else (the
 * first stream to see an id, a chunk's edge, an HTTP chunk's size line, an id out of order
 * or missed) takes the search, which finds every id whatever the order.
 */
class Arrivals {
  times = new Float64Array(4096).fill(Number.NaN);
  /** Bytes of an id cut off by the end of a chunk. */
  private carry: Buffer | null = null;
  /** The index of the id expected next. */
  private next = 0;
  /** How many bytes the last marker began past the end of the id before it (-1: none yet). */
  private stride = -1;

  at(index: number): number {
    return index < this.times.length ? this.times[index]! : Number.NaN;
  }

  /** Records every version id whose marker and closing quote are in the bytes so far. */
  read(chunk: Buffer): void {
    chunks += 1;
    const bytes = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    const time = now();
    let position = 0;
    for (;;) {
      let index = -1;
      let end = -1;
      const expected = this.next < order.length ? order[this.next]! : null;
      // Where and what this stream expects: the marker, the id, and the closing quote.
      const guess = position + this.stride;
      if (expected && this.stride >= 0 && holdsAt(bytes, guess, MARK) && holdsAt(bytes, guess + MARK.length, expected) && bytes[guess + MARK.length + expected.length] === QUOTE) {
        index = this.next;
        end = guess + MARK.length + expected.length;
        this.stride = guess - position;
      } else {
        const start = bytes.indexOf(MARK, position);
        if (start < 0) break;
        end = bytes.indexOf(QUOTE, start + MARK.length);
        if (end < 0) {
          this.carry = Buffer.from(bytes.subarray(start));
          return;
        }
        this.stride = start - position;
        if (expected && end - start - MARK.length === expected.length && holdsAt(bytes, start + MARK.length, expected)) index = this.next;
        else {
          const id = bytes.toString('latin1', start + MARK.length, end);
          index = versionIndex.get(id) ?? -1;
          if (index < 0) {
            versionIndex.set(id, (index = order.length));
            order.push(Buffer.from(id, 'latin1'));
          }
        }
      }
      if (index >= this.times.length) {
        const grown = new Float64Array(this.times.length * 2).fill(Number.NaN);
        grown.set(this.times);
        this.times = grown;
      }
      this.times[index] = time;
      this.next = index + 1;
      position = end + 1;
    }
    // A marker may begin in the last bytes (at a quote: every marker begins with one): they are read again with the next chunk.
    for (let keep = Math.max(position, bytes.length - (MARK.length - 1)); keep < bytes.length; keep += 1) {
      if (bytes[keep] !== QUOTE) continue;
      this.carry = Buffer.from(bytes.subarray(keep));
      this.stride = -1;
      break;
    }
  }
}

const arrivals: Arrivals[] = [];
const sockets: Socket[] = [];

/** Opens a socket to the server and writes `head` (and `body`): the socket, once connected. */
function connect(head: string, body = ''): Promise<Socket> {
  const { hostname, port } = new URL(url!);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(head + body);
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

/** GraphQL over SSE, the request written by hand: the response's bytes (head, chunk sizes and all) are scanned for version ids. */
async function openSse(into: Arrivals): Promise<void> {
  const body = JSON.stringify({ query: QUERY });
  const { host, pathname } = new URL(url!);
  const socket = await connect(
    `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    body,
  );
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('data', (chunk: Buffer) => {
      if (!chunk.toString('latin1', 0, 15).startsWith('HTTP/1.1 200')) return reject(new Error(`SSE: ${chunk.toString('latin1', 0, 200)}`));
      into.read(chunk);
      socket.on('data', (more: Buffer) => into.read(more));
      resolve();
    });
  });
}

const PING = Buffer.from([0x89, 0x00]);
/** An empty pong, masked (with a zero key) as a client's frames are. */
const PONG = Buffer.from([0x8a, 0x80, 0, 0, 0, 0]);

/** A client's text frame: masked (with a zero key, which leaves the payload as it is). */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const length = payload.length < 126 ? [0x80 | payload.length] : [0x80 | 126, payload.length >> 8, payload.length & 0xff];
  return Buffer.concat([Buffer.from([0x81, ...length, 0, 0, 0, 0]), payload]);
}

/** graphql-ws over a WebSocket, the upgrade and the client's frames written by hand. */
async function openWs(into: Arrivals): Promise<void> {
  const { host, pathname } = new URL(url!);
  const socket = await connect(
    `GET ${pathname} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n`,
  );
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    let state: 'upgrading' | 'initialising' | 'open' = 'upgrading';
    socket.on('data', (chunk: Buffer) => {
      // The server pings (an empty ping frame: 0x89 0x00, bytes that JSON text never holds)
      // and ends a socket that does not answer: a pong for each.
      if (chunk.includes(PING)) socket.write(PONG);
      if (state === 'open') return into.read(chunk);
      if (state === 'upgrading') {
        if (!chunk.toString('latin1', 0, 15).startsWith('HTTP/1.1 101')) return reject(new Error(`WebSocket: ${chunk.toString('latin1', 0, 200)}`));
        state = 'initialising';
        socket.write(textFrame(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
      }
      if (chunk.includes('"connection_ack"')) {
        state = 'open';
        // An operation id of its own, random, as graphql-ws's client makes them: the server frames each stream's events for it.
        socket.write(textFrame(JSON.stringify({ id: randomBytes(16).toString('hex'), type: 'subscribe', payload: { query: QUERY } })));
        // The server opens the stream as it handles the message: give it a moment.
        setTimeout(resolve, 5);
      } else if (chunk.includes('"type":"error"')) reject(new Error(`WebSocket: ${chunk.toString()}`));
    });
  });
}

for (let index = 0; index < COUNT; index += 1) {
  const into = new Arrivals();
  arrivals.push(into);
  await (index % 2 === 0 ? openSse(into) : openWs(into));
}
process.stdout.write('ready\n');

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const { committed } = JSON.parse(line) as { committed: Record<string, number> };
  const chunksRead = chunks;
  const latencies: number[] = [];
  let missing = 0;
  const missingByStream: number[] = [];
  for (const into of arrivals) {
    let streamMissing = 0;
    for (const [versionId, at] of Object.entries(committed)) {
      const index = versionIndex.get(versionId);
      const arrival = index === undefined ? Number.NaN : into.at(index);
      if (Number.isNaN(arrival)) streamMissing += 1;
      else latencies.push(arrival - at);
    }
    missing += streamMissing;
    missingByStream.push(streamMissing);
  }
  if (process.env.FANOUT_DEBUG) process.stderr.write(`missing by stream (even: SSE, odd: WS): ${JSON.stringify(missingByStream.map((count, index) => [index, count] as const).filter(([, count]) => count > 0).slice(0, 40))}\n`);
  latencies.sort((a, b) => a - b);
  process.stdout.write(`${JSON.stringify({ deliveries: latencies.length, missing, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1) ?? Number.NaN, chunksPerStream: Math.round(chunksRead / COUNT) })}\n`);
  for (const socket of sockets) socket.destroy();
  process.exit(0);
}
