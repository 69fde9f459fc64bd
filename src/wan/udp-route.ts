/**
 * A UDP route of a directed link: a socket on 127.0.0.1 whose every datagram goes on to one
 * target after the link's delay, unless the link drops it. One-directional: answers to a
 * datagram are sent by the mesh to the advertised address of its sender, which the sender
 * region's address map turns into a route of the reverse link.
 *
 * The order of checks is that of a real path: a blackholed link drops at once; a full route
 * queue tail-drops (a router's buffer); the loss draw drops before the datagram takes bandwidth;
 * the survivor reserves its bytes in the link's bucket and then travels its one-way delay. A
 * blackhole that starts while a datagram is in flight drops it too when it is due.
 */
import { createSocket, type Socket } from 'node:dgram';
import type { Clock, Logger, TimerHandle } from '../core/index.ts';
import { atDeadline } from './deadline.ts';
import type { Link } from './link.ts';
import type { WanLimits } from './limits.ts';
import type { HostPort } from './target.ts';

/** A UDP route, bound and forwarding. */
export class UdpRoute {
  readonly kind = 'udp' as const;
  private readonly timers = new Set<TimerHandle>();
  private queued = 0;
  private queuedBytes = 0;
  private closed = false;

  private constructor(
    private readonly link: Link,
    private readonly socket: Socket,
    readonly port: number,
    readonly target: HostPort,
    private readonly clock: Clock,
    private readonly limits: WanLimits,
    private readonly logger: Logger,
  ) {
    socket.on('message', (msg) => this.onDatagram(msg));
    // Sending to a closed port is not an error for an unconnected socket; anything else is
    // logged and the route keeps running (a real path does not stop for one bad packet).
    socket.on('error', (err) => this.logger.warn({ err, link: `${link.from}>${link.to}` }, 'udp route error'));
  }

  /** Binds 127.0.0.1:`listenPort` (0: ephemeral). */
  static async open(link: Link, target: HostPort, listenPort: number, o: { clock: Clock; limits: WanLimits; logger: Logger }): Promise<UdpRoute> {
    const socket = createSocket({ type: 'udp4' });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(listenPort, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new UdpRoute(link, socket, socket.address().port, target, o.clock, o.limits, o.logger);
  }

  private onDatagram(msg: Buffer): void {
    const { link } = this;
    const c = link.counters;
    // Drawn for every datagram, dropped or not, so one seed gives one loss pattern.
    const lost = link.lost();
    const delayMs = link.delayMs();
    if (link.settings.blackhole) return void c.datagramsDroppedBlackhole++;
    if (this.queued >= this.limits.udpDatagramsQueuedPerRouteMax || this.queuedBytes + msg.length > this.limits.udpQueuedBytesPerRouteMax) {
      return void c.datagramsDroppedQueue++;
    }
    if (lost) return void c.datagramsDroppedLoss++;
    const waitMs = link.pacer.reserve(msg.length) + delayMs;
    this.queued++;
    this.queuedBytes += msg.length;
    c.datagramsQueued++;
    c.bytesQueued += msg.length;
    const timer = atDeadline(this.clock, this.clock.monotonicMs() + waitMs, () => {
      this.timers.delete(timer);
      this.queued--;
      this.queuedBytes -= msg.length;
      c.datagramsQueued--;
      c.bytesQueued -= msg.length;
      if (link.settings.blackhole) return void c.datagramsDroppedBlackhole++;
      if (this.closed) return;
      this.socket.send(msg, this.target.port, this.target.host);
      c.datagramsForwarded++;
      c.bytesForwarded += msg.length;
    });
    this.timers.add(timer);
  }

  /** Datagrams waiting on this route. */
  get queuedDatagrams(): number {
    return this.queued;
  }

  /** Stops forwarding; datagrams in flight are dropped. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) t.cancel();
    this.link.counters.datagramsQueued -= this.queued;
    this.link.counters.bytesQueued -= this.queuedBytes;
    this.timers.clear();
    this.queued = 0;
    this.queuedBytes = 0;
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}
