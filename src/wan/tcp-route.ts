/**
 * A TCP route of a directed link `from → to`: a server on 127.0.0.1 in `from`'s address space;
 * each accepted connection opens one to the target in `to`. Bytes the client sends cross the
 * `from → to` link, bytes coming back cross `to → from`, each through its own TcpPipe (its own
 * delay, bandwidth, loss and blackhole).
 *
 * Connections made while either direction is blackholed are accepted but carry nothing: the
 * connection to the target is opened only once both directions are open (the handshake would not
 * get through a cut), and what the client sends meanwhile is held, bounded, in its pipe. The
 * handshake itself takes no emulated delay; the first bytes do.
 *
 * Endings: a FIN crosses the link after the bytes before it. When one socket closes, what it sent
 * still crosses, then the other socket is ended and destroyed; what was on its way to the closed
 * socket is dropped. A socket error (a reset) resets the other side at once. `reset()` (the
 * control API's `"reset": true`) resets both sockets, as when TCP gives up on a long cut.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Clock, Logger, TimerHandle } from '../core/index.ts';
import type { Link } from './link.ts';
import type { WanLimits } from './limits.ts';
import type { HostPort } from './target.ts';
import { TcpPipe } from './tcp-pipe.ts';

interface RouteContext {
  forward: Link;
  reverse: Link;
  target: HostPort;
  clock: Clock;
  limits: WanLimits;
  logger: Logger;
}

/** One client connection and its connection to the target. */
class TcpConnection {
  private upstream: Socket | null = null;
  private readonly out: TcpPipe;
  private back: TcpPipe | null = null;
  private connectTimer: TimerHandle | null = null;
  private closedSockets = 0;
  private over = false;
  private readonly unsubscribe: (() => void)[];

  constructor(
    private readonly client: Socket,
    private readonly ctx: RouteContext,
    private readonly onOver: (conn: TcpConnection) => void,
  ) {
    client.setNoDelay(true);
    this.out = new TcpPipe(ctx.forward, client, ctx.clock, ctx.limits);
    client.on('data', (chunk: Buffer) => this.out.push(chunk));
    client.on('end', () => this.out.pushEnd());
    client.on('error', () => this.reset());
    client.on('close', () => this.onSocketClosed('client'));
    const tryConnect = (): void => this.tryConnect();
    this.unsubscribe = [ctx.forward.onChange(tryConnect), ctx.reverse.onChange(tryConnect)];
    this.tryConnect();
  }

  private tryConnect(): void {
    const { forward, reverse, target, clock, limits } = this.ctx;
    if (this.over || this.upstream !== null || forward.settings.blackhole || reverse.settings.blackhole) return;
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true });
    this.upstream = upstream;
    upstream.setNoDelay(true);
    this.connectTimer = clock.setTimeout(() => this.fail(), limits.tcpConnectTimeoutMs);
    upstream.once('connect', () => {
      this.connectTimer?.cancel();
      this.connectTimer = null;
      if (this.over) return;
      const back = new TcpPipe(reverse, upstream, clock, limits);
      this.back = back;
      upstream.on('data', (chunk: Buffer) => back.push(chunk));
      upstream.on('end', () => back.pushEnd());
      upstream.on('close', () => this.onSocketClosed('upstream'));
      this.out.attach(upstream);
      back.attach(this.client);
    });
    upstream.on('error', () => (this.back === null ? this.fail() : this.reset()));
  }

  /** The target refused or did not answer: the client sees a reset, as from a real refusal. */
  private fail(): void {
    if (this.over) return;
    this.ctx.forward.counters.connectionsFailed++;
    this.reset();
  }

  private onSocketClosed(which: 'client' | 'upstream'): void {
    if (this.over) return;
    this.closedSockets++;
    const upstream = this.upstream;
    if (this.closedSockets === 2 || upstream === null || this.back === null) return this.finish();
    // The closed side's bytes still cross; the other side is ended after them and destroyed.
    const [from, into, other] = which === 'client' ? [this.out, this.back, upstream] : [this.back, this.out, this.client];
    into.discard();
    if (from.finished) other.destroy();
    else from.pushEnd({ destroy: true });
  }

  /** Resets both sockets at once (RST where the socket is connected). */
  reset(): void {
    if (this.over) return;
    for (const s of [this.client, this.upstream]) {
      if (s === null || s.destroyed) continue;
      if (s.readyState === 'open' || s.readyState === 'readOnly' || s.readyState === 'writeOnly') s.resetAndDestroy();
      else s.destroy();
    }
    this.finish();
  }

  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.connectTimer?.cancel();
    this.out.discard();
    this.back?.discard();
    for (const u of this.unsubscribe) u();
    if (!this.client.destroyed) this.client.destroy();
    if (this.upstream !== null && !this.upstream.destroyed) this.upstream.destroy();
    this.onOver(this);
  }
}

/** A TCP route, listening and forwarding. */
export class TcpRoute {
  readonly kind = 'tcp' as const;
  private readonly connections = new Set<TcpConnection>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly target: HostPort,
    private readonly ctx: RouteContext,
  ) {
    server.on('connection', (client) => this.onConnection(client));
    server.on('error', (err) => ctx.logger.warn({ err, link: `${ctx.forward.from}>${ctx.forward.to}` }, 'tcp route error'));
  }

  /** Listens on 127.0.0.1:`listenPort` (0: ephemeral). */
  static async open(ctx: RouteContext, listenPort: number): Promise<TcpRoute> {
    const server = createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    return new TcpRoute(server, typeof addr === 'object' && addr ? addr.port : listenPort, ctx.target, ctx);
  }

  private onConnection(client: Socket): void {
    const counters = this.ctx.forward.counters;
    if (this.connections.size >= this.ctx.limits.connectionsPerRouteMax) {
      counters.connectionsRejected++;
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    counters.connectionsOpen++;
    const conn = new TcpConnection(client, this.ctx, (c) => {
      this.connections.delete(c);
      counters.connectionsOpen--;
    });
    this.connections.add(conn);
  }

  /** Connections open through this route now. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Resets every open connection; returns how many. */
  resetAll(): number {
    const n = this.connections.size;
    for (const c of [...this.connections]) c.reset();
    return n;
  }

  /** Stops listening and resets every connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.resetAll();
    await closed;
  }
}
