/**
 * A TCP proxy on 127.0.0.1 for network-fault tests: it forwards every connection to a target and
 * can cut the traffic off without closing anything.
 *
 * `blackhole()` stops forwarding in both directions: both sides of every connection stop being
 * read, so bytes pile up in the kernel buffers (as TCP retransmits across a real partition) and
 * the peers see requests that simply get no answer. Connections made while blackholed are
 * accepted but not forwarded either. `restore()` resumes forwarding: whatever was held is
 * delivered late, in order (a healed partition), or, with `{ reset: true }`, every held
 * connection is destroyed instead (a partition long enough for TCP to give up).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket;
}

/** A running proxy. */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private blackholed = false;
  private closed = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.onConnection(client));
  }

  /** Listens on 127.0.0.1:0 and forwards to `target` (which `setTarget` can still change). */
  static async start(target: { host?: string; port: number } = { port: 0 }): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    return new TcpProxy(server, port, { host: target.host ?? '127.0.0.1', port: target.port });
  }

  /** Where new connections go (connections already open keep their target). */
  setTarget(target: { host?: string; port: number }): void {
    this.target = { host: target.host ?? '127.0.0.1', port: target.port };
  }

  /** `127.0.0.1:<port>` of the proxy. */
  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  get isBlackholed(): boolean {
    return this.blackholed;
  }

  /** Connections currently open through the proxy. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Stops forwarding in both directions, keeping every connection open. */
  blackhole(): void {
    this.blackholed = true;
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream.pause();
    }
  }

  /** Forwards again: held bytes are delivered (or, with `reset`, held connections are destroyed). */
  restore(options: { reset?: boolean } = {}): void {
    this.blackholed = false;
    for (const pair of [...this.pairs]) {
      if (options.reset) {
        this.destroy(pair);
        continue;
      }
      pair.client.resume();
      pair.upstream.resume();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const pair of [...this.pairs]) this.destroy(pair);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onConnection(client: Socket): void {
    if (this.closed) {
      client.destroy();
      return;
    }
    client.setNoDelay(true);
    const upstream = connect({ host: this.target.host, port: this.target.port });
    upstream.setNoDelay(true);
    const pair: Pair = { client, upstream };
    this.pairs.add(pair);
    if (this.blackholed) {
      client.pause();
      upstream.pause();
    }
    forward(client, upstream, () => this.blackholed);
    forward(upstream, client, () => this.blackholed);
    const end = () => this.destroy(pair);
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }

  private destroy(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}

/** Copies `from` to `to` with backpressure, never resuming `from` while blackholed. */
function forward(from: Socket, to: Socket, blackholed: () => boolean): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => {
    if (!blackholed()) from.resume();
  });
}
