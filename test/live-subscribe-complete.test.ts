import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { SUBSCRIBE_EVENTS, useListening } from './support/live.js';
import { useTestServer } from './support/server.js';

/** A subscription its client completes before it has started holds no stream. */
const server = useTestServer();
const listening = useListening(() => server.app);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('subscribe then complete at once over WebSocket', () => {
  it('leaves no stream open (the key can open its 50 streams afterwards)', async () => {
    const client = await server.newWorkspace();
    const ws = new WebSocket(listening().wsUrl, 'graphql-transport-ws');
    const messages: any[] = [];
    ws.on('message', (raw) => messages.push(JSON.parse(raw.toString())));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${client.token}` } }));
    while (!messages.some((message) => message.type === 'connection_ack')) await sleep(10);
    for (let index = 0; index < 60; index += 1) {
      ws.send(JSON.stringify({ id: `x${index}`, type: 'subscribe', payload: { query: SUBSCRIBE_EVENTS } }));
      ws.send(JSON.stringify({ id: `x${index}`, type: 'complete' }));
    }
    await sleep(1500);
    const hub = eventHubOf(server.app);
    expect(hub.openStreams).toBe(0);
    ws.close();
  }, 20_000);
});
