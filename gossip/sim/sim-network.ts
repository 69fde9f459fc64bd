/**
 * A simulated network for mesh members: per directed link loss, delay, jitter and blocking
 * (partitions), and per member a handling delay (a "slow member", as under CPU starvation: its
 * datagrams and stream requests wait in a FIFO before it handles them, while its timers keep
 * time). Everything is deterministic from one printed seed: one seeded PRNG (src/core
 * seededRandom) decides every loss and delay, and time is the SimClock over a FakeClock.
 *
 * Streams (push-pull) model TCP: no loss, but a lost segment costs a retransmission timeout;
 * a blocked link or a stopped endpoint answers nothing and the exchange times out, as a
 * black-holed SYN does.
 */
import { EdgeqError, seededRandom } from '../../src/core/index.ts';
import type { BoundAddress, MeshTransport, TransportHandlers, TransportStartOptions } from '../transport/transport.ts';
import { parseAddress } from '../wire/names.ts';
import type { SimClock } from './sim-clock.ts';

/** One directed link's behaviour. */
export interface LinkSettings {
  /** Probability that a datagram is lost, 0 … 1. */
  lossRate: number;
  /** One-way delay. */
  delayMs: number;
  /** Uniform extra delay in [0, jitterMs). */
  jitterMs: number;
  /** Nothing passes (a partition or a blackhole). */
  blocked: boolean;
}

/** A slow member's handling delay: uniform in [minMs, maxMs], in arrival order. */
export interface HandlingDelay {
  minMs: number;
  maxMs: number;
}

/** Counters over the whole network. */
export interface SimNetworkStats {
  packetsSent: number;
  packetsDelivered: number;
  packetsLost: number;
  packetsBlocked: number;
  bytesSent: number;
  exchanges: number;
  exchangesFailed: number;
}

/** A TCP retransmission timeout, at least: what one lost segment costs a stream. */
const STREAM_RTO_MS_MIN = 200;

/** Options of the network. */
export interface SimNetworkOptions {
  clock: SimClock;
  seed: number;
  /** Every link's settings unless set per link. */
  defaults?: Partial<LinkSettings>;
}

/** Many endpoints on one simulated network. */
export class SimNetwork {
  readonly clock: SimClock;
  readonly seed: number;
  private readonly random: () => number;
  private defaults: LinkSettings;
  private readonly links = new Map<string, Partial<LinkSettings>>();
  private readonly blocked = new Set<string>();
  private readonly endpoints = new Map<string, SimEndpoint>();
  private readonly slow = new Map<string, HandlingDelay>();
  /** When each slow member will be done with its queue (FIFO handling). */
  private readonly busyUntil = new Map<string, number>();
  readonly stats: SimNetworkStats = { packetsSent: 0, packetsDelivered: 0, packetsLost: 0, packetsBlocked: 0, bytesSent: 0, exchanges: 0, exchangesFailed: 0 };

  constructor(options: SimNetworkOptions) {
    this.clock = options.clock;
    this.seed = options.seed;
    this.random = seededRandom(options.seed);
    this.defaults = { lossRate: 0, delayMs: 25, jitterMs: 0, blocked: false, ...options.defaults };
  }

  /** The transport of the member at `address` (`host:port`); one per address. */
  endpoint(address: string): MeshTransport {
    if (!parseAddress(address)) throw new EdgeqError('INVALID_ARGUMENT', `not an address: ${address}`);
    const existing = this.endpoints.get(address);
    if (existing) return existing;
    const e = new SimEndpoint(this, address);
    this.endpoints.set(address, e);
    return e;
  }

  /** Changes every link's defaults. */
  setDefaults(settings: Partial<LinkSettings>): void {
    this.defaults = { ...this.defaults, ...settings };
  }

  /** Changes the directed link `from` → `to`. */
  setLink(from: string, to: string, settings: Partial<LinkSettings>): void {
    this.links.set(`${from}>${to}`, { ...this.links.get(`${from}>${to}`), ...settings });
  }

  /** Blocks every link between the two groups, both ways. */
  partition(a: readonly string[], b: readonly string[]): void {
    for (const x of a) for (const y of b) {
      this.blocked.add(`${x}>${y}`);
      this.blocked.add(`${y}>${x}`);
    }
  }

  /** Lifts every partition (per-link settings stay). */
  heal(): void {
    this.blocked.clear();
  }

  /** Makes the member at `address` slow (or healthy again with null). */
  setHandlingDelay(address: string, delay: HandlingDelay | null): void {
    if (delay === null) this.slow.delete(address);
    else this.slow.set(address, delay);
  }

  /** The settings of `from` → `to` now. */
  link(from: string, to: string): LinkSettings {
    const s = { ...this.defaults, ...this.links.get(`${from}>${to}`) };
    if (this.blocked.has(`${from}>${to}`)) s.blocked = true;
    return s;
  }

  private oneWayMs(l: LinkSettings): number {
    return l.delayMs + (l.jitterMs > 0 ? this.random() * l.jitterMs : 0);
  }

  /** When a message arriving now at `to` gets handled (now, unless `to` is slow). */
  private handleDelayMs(to: string): number {
    const slow = this.slow.get(to);
    if (!slow) return 0;
    const now = this.clock.monotonicMs();
    const at = Math.max(now + slow.minMs + this.random() * (slow.maxMs - slow.minMs), this.busyUntil.get(to) ?? 0);
    this.busyUntil.set(to, at);
    return at - now;
  }

  /** Delivers `bytes` to `to` now, as if it came from `from` (fuzzing a receive path). */
  inject(to: string, bytes: Buffer, from = '192.0.2.1:9'): boolean {
    const e = this.endpoints.get(to);
    if (!e?.handlers) return false;
    e.handlers.onPacket(bytes, from);
    return true;
  }

  /** @internal */
  sendPacket(from: SimEndpoint, to: string, bytes: Buffer): void {
    this.stats.packetsSent++;
    this.stats.bytesSent += bytes.length;
    const l = this.link(from.address, to);
    if (l.blocked) {
      this.stats.packetsBlocked++;
      return;
    }
    if (l.lossRate > 0 && this.random() < l.lossRate) {
      this.stats.packetsLost++;
      return;
    }
    this.clock.setTimeout(() => {
      const target = this.endpoints.get(to);
      if (!target?.handlers) return;
      const deliver = (): void => {
        // A member that stopped meanwhile handles nothing.
        if (!target.handlers) return;
        this.stats.packetsDelivered++;
        target.handlers.onPacket(bytes, from.address);
      };
      const wait = this.handleDelayMs(to);
      if (wait > 0) this.clock.setTimeout(deliver, wait);
      else deliver();
    }, this.oneWayMs(l));
  }

  /** @internal */
  exchange(from: SimEndpoint, to: string, request: Buffer, timeoutMs: number, done: (err: EdgeqError | null, response: Buffer | null) => void): void {
    this.stats.exchanges++;
    this.stats.bytesSent += request.length;
    let finished = false;
    const finish = (err: EdgeqError | null, response: Buffer | null): void => {
      if (finished) return;
      finished = true;
      timer.cancel();
      if (err) this.stats.exchangesFailed++;
      done(err, response);
    };
    const timer = this.clock.setTimeout(() => finish(new EdgeqError('TIMEOUT', `push-pull with ${to} took over ${timeoutMs} ms`), null), timeoutMs);
    const legMs = (l: LinkSettings): number => this.oneWayMs(l) + (l.lossRate > 0 && this.random() < l.lossRate ? Math.max(STREAM_RTO_MS_MIN, 2 * l.delayMs) : 0);
    const there = this.link(from.address, to);
    if (there.blocked) return; // SYN lost: the timer answers.
    // Handshake (SYN, SYN-ACK) then the request: three one-way trips before the server reads it.
    const requestAtMs = legMs(there) + legMs(this.link(to, from.address)) + legMs(there);
    this.clock.setTimeout(() => {
      const target = this.endpoints.get(to);
      if (this.link(from.address, to).blocked) return;
      if (!target?.handlers) {
        finish(new EdgeqError('CONNECTION_CLOSED', `push-pull with ${to}: connection refused`), null);
        return;
      }
      if (request.length > target.frameBytesMax) {
        finish(new EdgeqError('CONNECTION_CLOSED', `push-pull with ${to}: frame refused`), null);
        return;
      }
      const handle = (): void => {
        if (!target.handlers) return;
        target.handlers.onStream(request, from.address, (response) => {
          if (response === null) {
            finish(new EdgeqError('CONNECTION_CLOSED', `push-pull with ${to}: closed without an answer`), null);
            return;
          }
          this.stats.bytesSent += response.length;
          const back = this.link(to, from.address);
          if (back.blocked) return;
          this.clock.setTimeout(() => {
            if (response.length > from.frameBytesMax) finish(new EdgeqError('FRAME_TOO_LARGE', `push-pull answer of ${response.length} bytes is over the bound`), null);
            else finish(null, response);
          }, legMs(back));
        });
      };
      const wait = this.handleDelayMs(to);
      if (wait > 0) this.clock.setTimeout(handle, wait);
      else handle();
    }, requestAtMs);
  }
}

/** One member's end of a SimNetwork. */
class SimEndpoint implements MeshTransport {
  handlers: TransportHandlers | null = null;
  frameBytesMax = 0;

  constructor(
    private readonly net: SimNetwork,
    readonly address: string,
  ) {}

  async start(handlers: TransportHandlers, options: TransportStartOptions): Promise<BoundAddress> {
    if (this.handlers) throw new EdgeqError('INVALID_ARGUMENT', `${this.address} is already started`);
    this.handlers = handlers;
    this.frameBytesMax = options.frameBytesMax;
    const a = parseAddress(this.address)!;
    return { host: a.host, port: a.port };
  }

  sendPacket(to: string, bytes: Buffer): void {
    if (!this.handlers) return;
    this.net.sendPacket(this, to, bytes);
  }

  exchange(to: string, request: Buffer, timeoutMs: number, done: (err: EdgeqError | null, response: Buffer | null) => void): void {
    if (!this.handlers) {
      done(new EdgeqError('CONNECTION_CLOSED', 'transport stopped'), null);
      return;
    }
    this.net.exchange(this, to, request, timeoutMs, done);
  }

  async stop(): Promise<void> {
    this.handlers = null;
  }
}
