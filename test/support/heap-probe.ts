import WebSocket from 'ws';
import type { ServerProcess } from './process.js';

/**
 * Memory a server process holds, asked of it through its inspector (the process started with
 * `--inspect=127.0.0.1:0`): a full garbage collection, then `process.memoryUsage()`. Unlike
 * RSS sampled under load, this does not move with when V8 happens to collect: what garbage a
 * burst of requests left is gone, what the server still references counts.
 */
export interface HeapProbe {
  /** The JavaScript heap in use plus memory outside it (buffers), in bytes, after a full collection. */
  held(): Promise<number>;
  close(): void;
}

/** The flag that opens the inspector on a free port of the loopback address. */
export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

export async function openHeapProbe(server: ServerProcess): Promise<HeapProbe> {
  const deadline = Date.now() + 10_000;
  let address: string | undefined;
  while ((address = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1]) === undefined) {
    if (Date.now() > deadline) throw new Error(`the server opened no inspector:\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const socket = new WebSocket(address);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let nextId = 0;
  const waiting = new Map<number, { resolve: (result: any) => void; reject: (error: Error) => void }>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    const call = waiting.get(message.id);
    if (!call) return;
    waiting.delete(message.id);
    if (message.error) call.reject(new Error(JSON.stringify(message.error)));
    else call.resolve(message.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<any>((resolve, reject) => {
      nextId += 1;
      waiting.set(nextId, { resolve, reject });
      socket.send(JSON.stringify({ id: nextId, method, params }));
    });
  return {
    async held() {
      // Twice: objects that a finalizer or a weak reference kept through the first are freed by the second.
      await send('HeapProfiler.collectGarbage');
      await send('HeapProfiler.collectGarbage');
      const { result } = await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
      const usage = JSON.parse(result.value) as NodeJS.MemoryUsage;
      return usage.heapUsed + usage.external;
    },
    close() {
      socket.close();
    },
  };
}
