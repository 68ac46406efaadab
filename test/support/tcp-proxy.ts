import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that a test can break on purpose: `cut()` drops every
 * open connection (a failover), `refuse()` closes the port (the database is down),
 * `blackHole()` accepts connections and never answers (a network that eats packets), and
 * `restore()` brings it back on the same port.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private mode: 'forward' | 'black hole' = 'forward';
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(targetUrl: string): Promise<TcpProxy> {
    const target = new URL(targetUrl);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.listen();
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(this.port);
    return through.toString();
  }

  private listen(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        this.port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => {});
    if (this.mode === 'black hole') return;
    const upstream = net.connect(this.targetPort, this.targetHost);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Drops every open connection; new ones are accepted as before. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Drops every connection and closes the port: connecting is refused. */
  async refuse(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.cut();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Drops every connection; new ones are accepted and then never answered. */
  async blackHole(): Promise<void> {
    this.mode = 'black hole';
    this.cut();
    if (!this.server) await this.listen();
  }

  /** Forwards again, on the same port. */
  async restore(): Promise<void> {
    this.mode = 'forward';
    this.cut();
    if (!this.server) await this.listen();
  }

  async close(): Promise<void> {
    await this.refuse();
  }
}
