import type { Socket } from 'node:net';
import type { StreamTransport } from '../subscriptions/event-stream.js';

/**
 * What a live stream can ask of the Node socket its consumer is connected by (SSE's request
 * socket, or a WebSocket's): holding its writes (cork) until the release (uncork), so that
 * the events of one batch leave in one write, and — when `unsentBytes` is given — whether
 * more than `unsentLimit` waits unsent (the consumer is then not reading). Without a socket
 * (app.fetch in tests) the stream asks nothing.
 */
export function socketTransport(socket: Socket | undefined | null, unsent?: { bytes: () => number; limit: number }): StreamTransport {
  if (!socket) return {};
  return {
    hold() {
      if (socket.destroyed) return () => {};
      socket.cork();
      return () => {
        if (!socket.destroyed && socket.writableCorked > 0) socket.uncork();
      };
    },
    ...(unsent ? { stalled: () => unsent.bytes() > unsent.limit } : {}),
  };
}
