/**
 * One directed link `from → to`: its settings, its bandwidth bucket, its seeded random draws and
 * its traffic counters. Routes and TCP directions ask it for each item's delay and loss, and
 * subscribe to its changes (a blackhole must stop traffic already in flight).
 */
import type { Clock } from '../core/index.ts';
import { seededRandom } from '../core/index.ts';
import { Pacer } from './pacer.ts';
import type { LinkSettings } from './settings.ts';

/** What crossed a link, and what is on it now. */
export interface LinkCounters {
  /** Bytes delivered across the link: datagram payloads and TCP bytes of this direction. */
  bytesForwarded: number;
  datagramsForwarded: number;
  /** Datagrams dropped by the loss draw. */
  datagramsDroppedLoss: number;
  /** Datagrams dropped because the link was blackholed when they arrived or were due. */
  datagramsDroppedBlackhole: number;
  /** Datagrams dropped because their route's queue was full (tail drop). */
  datagramsDroppedQueue: number;
  /** TCP pieces that lost the loss draw and took a retransmission stall. */
  tcpLossStalls: number;
  /** Bytes on the link now (datagrams and TCP pieces waiting for their delay, or held by a blackhole). */
  bytesQueued: number;
  /** Datagrams on the link now. */
  datagramsQueued: number;
  /** TCP connections open through this link's routes (each also crosses the reverse link). */
  connectionsOpen: number;
  /** Connections reset on accept because their route had connectionsPerRouteMax open. */
  connectionsRejected: number;
  /** Connections reset because the target refused them or did not answer in tcpConnectTimeoutMs. */
  connectionsFailed: number;
  /** Connections crossing this link (either way) reset by a `reset` change. */
  connectionsReset: number;
}

function emptyCounters(): LinkCounters {
  return {
    bytesForwarded: 0,
    datagramsForwarded: 0,
    datagramsDroppedLoss: 0,
    datagramsDroppedBlackhole: 0,
    datagramsDroppedQueue: 0,
    tcpLossStalls: 0,
    bytesQueued: 0,
    datagramsQueued: 0,
    connectionsOpen: 0,
    connectionsRejected: 0,
    connectionsFailed: 0,
    connectionsReset: 0,
  };
}

/** FNV-1a over a string: a stable 32-bit seed per link and purpose. */
function hashSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A directed link. Built and owned by the LinkEmulator. */
export class Link {
  readonly counters: LinkCounters = emptyCounters();
  readonly pacer: Pacer;
  private current: LinkSettings;
  // Two streams, so that the loss pattern of a run does not depend on the jitter setting, and the
  // other way round; each seeded from the emulator's seed and the link's name, so one link's
  // draws do not depend on what other links carry.
  private readonly lossRand: () => number;
  private readonly delayRand: () => number;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly from: string,
    readonly to: string,
    settings: LinkSettings,
    options: { clock: Clock; seed: number; bandwidthBurstMs: number },
  ) {
    this.current = { ...settings };
    this.pacer = new Pacer(options.clock, options.bandwidthBurstMs);
    this.pacer.setRate(settings.bandwidthBytesPerSec);
    this.lossRand = seededRandom(hashSeed(`${options.seed}:${from}>${to}:loss`));
    this.delayRand = seededRandom(hashSeed(`${options.seed}:${from}>${to}:delay`));
  }

  get settings(): Readonly<LinkSettings> {
    return this.current;
  }

  /** Applies an already validated change and tells every subscriber. */
  apply(patch: Partial<LinkSettings>): void {
    this.current = { ...this.current, ...patch };
    this.pacer.setRate(this.current.bandwidthBytesPerSec);
    for (const fn of [...this.listeners]) fn();
  }

  /** Calls `fn` after every change; returns the unsubscribe function. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => void this.listeners.delete(fn);
  }

  /** One draw of the one-way delay: uniform in [latency − jitter, latency + jitter], floored at 0. */
  delayMs(): number {
    const { latencyMs, jitterMs } = this.current;
    const u = this.delayRand();
    return Math.max(0, latencyMs + (2 * u - 1) * jitterMs);
  }

  /** One loss draw: true with probability lossRate. Drawn for every item, so the pattern repeats for a seed. */
  lost(): boolean {
    const u = this.lossRand();
    return u < this.current.lossRate;
  }
}
