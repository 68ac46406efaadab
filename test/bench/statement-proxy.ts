/**
 * A TCP proxy in front of PostgreSQL that counts the SQL statements its clients run, by
 * reading the frontend side of the wire protocol: every simple Query ('Q') and every
 * Execute ('E') of the extended protocol is one statement. Parse ('P') and Bind ('B')
 * messages map an Execute back to its SQL text, so the counts can be split by statement.
 *
 * Why a proxy: pg_stat_statements needs shared_preload_libraries (a server restart), the
 * pg_stat_database counters count transactions and rows rather than statements, and the
 * server's own statement counter (src/db/statement-count.ts) is reachable from tests only.
 * Counting on the wire needs nothing from either server and counts memstore and the
 * baseline the same way; the proxy costs latency, so only the short counting pass goes
 * through it, never a measured run.
 */
import net from 'node:net';

const SSL_REQUEST_CODE = 80877103;
const GSSENC_REQUEST_CODE = 80877104;
const CANCEL_REQUEST_CODE = 80877102;

export interface StatementCounts {
  /** Statements run: simple queries plus executes. */
  statements: number;
  /** Of which BEGIN / COMMIT / ROLLBACK / SAVEPOINT. */
  transactionControl: number;
  /** Parse messages (statements prepared). */
  parses: number;
  /**
   * Round trips: simple queries, Sync messages, and Flush messages that end what the
   * client wrote (it then waits for the answer). postgres.js sends a statement that is not
   * prepared yet, with parameters, as Parse/Describe/Flush, waits for the parameter types,
   * then sends Bind/Execute/Sync: two round trips. Named statements are prepared once per
   * connection; unnamed ones (drizzle's default) every time.
   */
  roundTrips: number;
  /** Statement text (whitespace-collapsed, cut to 160 characters) → executions. */
  byText: Map<string, number>;
}

export interface StatementProxy {
  port: number;
  counts(): StatementCounts;
  reset(): void;
  close(): Promise<void>;
}

const TRANSACTION_CONTROL = /^\s*(begin|start\s+transaction|commit|end|rollback|savepoint|release)\b/i;

function shorten(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed.length > 160 ? `${collapsed.slice(0, 157)}...` : collapsed;
}

function readCString(buffer: Buffer, offset: number): [string, number] {
  const end = buffer.indexOf(0, offset);
  return [buffer.toString('utf8', offset, end), end + 1];
}

export async function startStatementProxy(upstreamHost: string, upstreamPort: number): Promise<StatementProxy> {
  let counts: StatementCounts = { statements: 0, transactionControl: 0, parses: 0, roundTrips: 0, byText: new Map() };
  const sockets = new Set<net.Socket>();

  const record = (text: string) => {
    counts.statements += 1;
    if (TRANSACTION_CONTROL.test(text)) counts.transactionControl += 1;
    const key = shorten(text);
    counts.byText.set(key, (counts.byText.get(key) ?? 0) + 1);
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, upstreamHost);
    sockets.add(client).add(upstream);
    const preparedText = new Map<string, string>();
    const portalStatement = new Map<string, string>();
    let pending: Buffer = Buffer.alloc(0);
    let startup = true;

    const parse = () => {
      let lastType = '';
      for (;;) {
        if (startup) {
          if (pending.length < 8) return;
          const length = pending.readInt32BE(0);
          if (pending.length < length) return;
          const code = pending.readInt32BE(4);
          pending = pending.subarray(length);
          if (code !== SSL_REQUEST_CODE && code !== GSSENC_REQUEST_CODE && code !== CANCEL_REQUEST_CODE) startup = false;
          continue;
        }
        if (pending.length < 5) {
          // A Flush at the end of a write: the client waits for the answer before going on.
          if (pending.length === 0 && lastType === 'H') counts.roundTrips += 1;
          return;
        }
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) return;
        const type = String.fromCharCode(pending[0]!);
        const body = pending.subarray(5, 1 + length);
        pending = pending.subarray(1 + length);
        lastType = type;
        if (type === 'Q') {
          counts.roundTrips += 1;
          record(readCString(body, 0)[0]);
        } else if (type === 'S') {
          counts.roundTrips += 1;
        } else if (type === 'P') {
          const [name, next] = readCString(body, 0);
          const [text] = readCString(body, next);
          preparedText.set(name, text);
          counts.parses += 1;
        } else if (type === 'B') {
          const [portal, next] = readCString(body, 0);
          const [statement] = readCString(body, next);
          portalStatement.set(portal, statement);
        } else if (type === 'E') {
          const [portal] = readCString(body, 0);
          record(preparedText.get(portalStatement.get(portal) ?? '') ?? '(unknown statement)');
        }
      }
    };

    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      parse();
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', closeBoth).on('error', closeBoth);
    upstream.on('close', closeBoth).on('error', closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    counts: () => ({ ...counts, byText: new Map(counts.byText) }),
    reset: () => {
      counts = { statements: 0, transactionControl: 0, parses: 0, roundTrips: 0, byText: new Map() };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
