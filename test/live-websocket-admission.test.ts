import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { socketAdmissionOf } from '../src/app.js';
import type { SocketAdmission } from '../src/http/websocket.js';
import { generateToken } from '../src/domain/api-keys.js';
import { DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY, KEYLESS_WEBSOCKET_MS, WEBSOCKETS_PER_KEY_STREAM } from '../src/domain/limits.js';
import { run, SUBSCRIBE_EVENTS, useListening } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * What a WebSocket may hold is bounded by the key its `connection_init` names: a socket that
 * names none is closed soon after its operations are refused, a key revoked later closes its
 * sockets as it ends its streams, and a key holds at most WEBSOCKETS_PER_KEY_STREAM × its
 * stream limit sockets on an instance.
 */
const KEY_CHECK_INTERVAL_MS = 500;
const server = useTestServer({ live: { keyCheckIntervalMs: KEY_CHECK_INTERVAL_MS } });
const listening = useListening(() => server.app);
const MAX_SOCKETS = WEBSOCKETS_PER_KEY_STREAM * DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY;

interface RawSocket {
  ws: WebSocket;
  messages: { type: string; id?: string; payload?: any }[];
  /** Resolves with the close's code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once the server acknowledged the connection (true), or closed it first (false). */
  acknowledged: Promise<boolean>;
}

/** A graphql-ws connection by hand, open, before its `connection_init`. */
async function openSocket(): Promise<RawSocket> {
  const ws = new WebSocket(listening().wsUrl, 'graphql-transport-ws');
  const messages: RawSocket['messages'] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const acknowledged = new Promise<boolean>((resolve) => {
    ws.on('message', (raw) => {
      const message = JSON.parse(raw.toString());
      messages.push(message);
      if (message.type === 'connection_ack') resolve(true);
    });
    void closed.then(() => resolve(false));
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  return { ws, messages, closed, acknowledged };
}

/** A graphql-ws connection by hand: `connection_init` with `payload`. */
async function connect(payload: Record<string, unknown> | undefined): Promise<RawSocket> {
  const socket = await openSocket();
  socket.ws.send(JSON.stringify({ type: 'connection_init', ...(payload ? { payload } : {}) }));
  return socket;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Runs `work` while the app looks keys up through `replacement` (given the app's own lookup). */
async function withKeyLookup(replacement: (keyOf: SocketAdmission['keyOf']) => SocketAdmission['keyOf'], work: () => Promise<void>): Promise<void> {
  const admission = socketAdmissionOf(server.app);
  const keyOf = admission.keyOf;
  admission.keyOf = replacement(keyOf);
  try {
    await work();
  } finally {
    admission.keyOf = keyOf;
  }
}

/** The key opens its whole allowance of sockets (nothing is held for sockets gone before), and one more is closed with 4429. */
async function expectFullAllowance(token: string): Promise<void> {
  const held = await Promise.all(Array.from({ length: MAX_SOCKETS }, () => connect(bearer(token))));
  expect((await Promise.all(held.map((socket) => socket.acknowledged))).filter(Boolean)).toHaveLength(MAX_SOCKETS);
  const extra = await connect(bearer(token));
  expect([await extra.acknowledged, (await extra.closed).code]).toEqual([false, 4429]);
  for (const socket of held) socket.ws.close();
}
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms))]);

describe('a WebSocket whose connection_init names no key', () => {
  it('is acknowledged, its subscription refused with UNAUTHENTICATED, and then closed with 4401: no key, an unknown key, a revoked one', async () => {
    const client = await server.newWorkspace();
    const created = await run(client, `mutation { createApiKey(input: { name: "gone", kind: ADMIN }) { ... on CreateApiKeySuccess { apiKey { id } token } } }`);
    // Used once, so that it was known before it was revoked.
    await expect((await connect(bearer(created.createApiKey.token))).acknowledged).resolves.toBe(true);
    await run(client, `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`, { id: created.createApiKey.apiKey.id });
    const payloads = [undefined, {}, bearer(generateToken()), bearer(created.createApiKey.token), { authorization: 'Basic x' }];
    await Promise.all(
      payloads.map(async (payload) => {
        const socket = await connect(payload);
        expect(await socket.acknowledged).toBe(true);
        const acknowledgedAt = Date.now();
        socket.ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIBE_EVENTS } }));
        const { code } = await within(socket.closed, KEYLESS_WEBSOCKET_MS + 3_000);
        expect([code, Date.now() - acknowledgedAt >= KEYLESS_WEBSOCKET_MS - 100], JSON.stringify(payload)).toEqual([4401, true]);
        // Refused as an error message (no key: before the operation runs) or as its answer's errors (a key looked up).
        const refused = socket.messages.find((message) => message.type === 'error' || (message.type === 'next' && message.payload.errors));
        expect(JSON.stringify(refused?.payload), JSON.stringify(payload)).toMatch(/"code":"UNAUTHENTICATED"/);
      }),
    );
  });
});

describe('a WebSocket whose key is revoked after it connected', () => {
  it('is closed with 4401 at the next check of keys, as the key\'s streams end; another key\'s socket stays', async () => {
    const client = await server.newWorkspace();
    const created = await run(client, `mutation { createApiKey(input: { name: "later revoked", kind: ADMIN }) { ... on CreateApiKeySuccess { apiKey { id } token } } }`);
    const doomed = await connect(bearer(created.createApiKey.token));
    const kept = await connect(bearer(client.token!));
    expect([await doomed.acknowledged, await kept.acknowledged]).toEqual([true, true]);
    await run(client, `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`, { id: created.createApiKey.apiKey.id });
    expect((await within(doomed.closed, KEY_CHECK_INTERVAL_MS * 2 + 2_000)).code).toBe(4401);
    await new Promise((resolve) => setTimeout(resolve, KEY_CHECK_INTERVAL_MS * 2));
    expect(kept.ws.readyState).toBe(WebSocket.OPEN);
    kept.ws.close();
  });
});

describe('an answer over WebSocket', () => {
  it('carries the error extensions an HTTP answer carries, without the HTTP status and headers', async () => {
    const token = generateToken();
    const query = '{ memoryStores(first: 1) { totalCount } }';
    const overHttp = await server.anonymous(token).send({ query });
    expect(overHttp.errors?.[0]?.extensions).toEqual({ code: 'UNAUTHENTICATED' });
    for (const payload of [bearer(token), undefined]) {
      const socket = await connect(payload);
      expect(await socket.acknowledged).toBe(true);
      socket.ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }));
      await within(new Promise<void>((resolve) => socket.ws.on('message', (raw) => ['error', 'complete'].includes(JSON.parse(raw.toString()).type) && resolve())), 5_000);
      const answer = socket.messages.find((message) => message.id === '1')!;
      // A key looked up: the operation's answer; no key: an error message before it runs.
      const errors = answer.type === 'next' ? answer.payload.errors : answer.payload;
      expect(errors.map((error: { extensions?: unknown }) => error.extensions), JSON.stringify(payload)).toEqual([{ code: 'UNAUTHENTICATED' }]);
      socket.ws.close();
    }
  });
});

describe('a key\'s WebSockets', () => {
  it(`are at most ${MAX_SOCKETS} on an instance: one more is closed with 4429 unacknowledged, another key's are not counted, and closing one makes room`, async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const held = await Promise.all(Array.from({ length: MAX_SOCKETS }, () => connect(bearer(client.token!))));
    expect((await Promise.all(held.map((socket) => socket.acknowledged))).every(Boolean)).toBe(true);
    const extra = await connect(bearer(client.token!));
    expect(await extra.acknowledged).toBe(false);
    expect((await extra.closed).code).toBe(4429);
    const others = await connect(bearer(other.token!));
    expect(await others.acknowledged).toBe(true);
    // A socket the key holds still runs its operations.
    held[0]!.ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'query { memoryStores(first: 1) { totalCount } }' } }));
    await within(new Promise<void>((resolve) => held[0]!.ws.on('message', (raw) => JSON.parse(raw.toString()).type === 'complete' && resolve())), 5_000);
    expect(held[0]!.messages.find((message) => message.type === 'next')?.payload).toEqual({ data: { memoryStores: { totalCount: 0 } } });

    held.pop()!.ws.close();
    let admitted = false;
    for (let attempt = 0; attempt < 50 && !admitted; attempt += 1) {
      const next = await connect(bearer(client.token!));
      admitted = await next.acknowledged;
      if (admitted) held.push(next);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(admitted).toBe(true);
    for (const socket of [...held, others]) socket.ws.close();
  }, 30_000);

  it('hold nothing for sockets that went away while their key was looked up', async () => {
    const client = await server.newWorkspace();
    // Each lookup answers only once its socket has gone.
    let gone: () => void = () => {};
    let lookups = 0;
    const answeringLate = (keyOf: SocketAdmission['keyOf']) => async (authorization: unknown) => {
      lookups += 1;
      await new Promise<void>((resolve) => (gone = resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      return keyOf(authorization);
    };
    await withKeyLookup(answeringLate, async () => {
      for (let index = 0; index < MAX_SOCKETS + 10; index += 1) {
        const ws = new WebSocket(listening().wsUrl, 'graphql-transport-ws');
        await new Promise((resolve) => ws.once('open', resolve));
        ws.send(JSON.stringify({ type: 'connection_init', payload: bearer(client.token!) }));
        while (lookups <= index) await new Promise((resolve) => setTimeout(resolve, 2));
        ws.terminate();
        await new Promise((resolve) => setTimeout(resolve, 5));
        gone();
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expectFullAllowance(client.token!);
  }, 30_000);

  it('hold nothing for sockets that sent connection_init twice (during the lookup, after the ack), closed during the lookup, or were terminated after the ack', async () => {
    const client = await server.newWorkspace();
    const slowly = (keyOf: SocketAdmission['keyOf']) => async (authorization: unknown) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return keyOf(authorization);
    };
    await withKeyLookup(slowly, async () => {
      const churn: Promise<unknown>[] = [];
      for (let index = 0; index < MAX_SOCKETS + 20; index += 1) {
        const socket = await openSocket();
        const init = JSON.stringify({ type: 'connection_init', payload: bearer(client.token!) });
        socket.ws.send(init);
        switch (index % 4) {
          case 0: // twice, while the first is looked up
            socket.ws.send(init);
            break;
          case 1: // twice, after the ack
            await socket.acknowledged;
            socket.ws.send(init);
            break;
          case 2: // closed by the client while looked up
            socket.ws.close();
            break;
          case 3: // terminated after the ack
            await socket.acknowledged;
            socket.ws.terminate();
            break;
        }
        churn.push(socket.closed);
      }
      await Promise.all(churn);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await expectFullAllowance(client.token!);
  }, 60_000);

  it('are closed with 1013 (try again later), unacknowledged, when the key cannot be looked up', async () => {
    const client = await server.newWorkspace();
    await withKeyLookup(
      () => () => Promise.reject(new Error('the database is unreachable')),
      async () => {
        const socket = await connect(bearer(client.token!));
        expect(await socket.acknowledged).toBe(false);
        expect((await socket.closed).code).toBe(1013);
      },
    );
    const after = await connect(bearer(client.token!));
    expect(await after.acknowledged).toBe(true);
    after.ws.close();
  });
});
