/**
 * The link emulator's bounds. Every queue it keeps (bytes per TCP direction, datagrams per UDP
 * route), every set it grows (links, routes, connections) and every wait it adds (latency, loss
 * stalls, connects) has one of these, and `resolveWanLimits` checks how they relate at start-up.
 */
import { EdgeqError } from '../core/index.ts';

/** Bounds of one LinkEmulator. */
export interface WanLimits {
  /** Directed links (a 16-region deployment has 16 × 15 = 240). */
  linksMax: number;
  /** Routes (listening addresses) on one directed link. */
  routesPerLinkMax: number;
  /** TCP connections open through one route at once; beyond this a new one is reset on accept. */
  connectionsPerRouteMax: number;
  /**
   * Bytes queued in one direction of one TCP connection (in flight on the emulated wire, or held
   * by a blackhole). Above it the source socket is paused, so a fast sender into a slow link waits
   * in its own kernel buffers instead of growing the emulator's memory.
   */
  tcpQueuedBytesPerDirectionMax: number;
  /** Below this the paused source is resumed (hysteresis, so it does not flap at every chunk). */
  tcpResumeBytes: number;
  /**
   * Largest piece a TCP direction is cut into. Each piece takes its own delay, bandwidth and loss
   * draw, so pacing is smooth at this grain and a "lost" piece stalls only what follows it.
   */
  tcpSegmentBytesMax: number;
  /** Floor of the stall a lost TCP piece takes (Linux's minimum retransmission timeout). */
  tcpRtoMsMin: number;
  /** How long the emulator waits for the target to accept a connection before resetting the client. */
  tcpConnectTimeoutMs: number;
  /** Datagrams queued on one UDP route (waiting for their delay or bandwidth); beyond, tail drop. */
  udpDatagramsQueuedPerRouteMax: number;
  /** Bytes queued on one UDP route; beyond, tail drop. */
  udpQueuedBytesPerRouteMax: number;
  /** Largest latency or jitter a link accepts (a minute: anything longer is a blackhole). */
  latencyMsMax: number;
  /**
   * Burst of a link's bandwidth bucket, as milliseconds of its rate: small, so a measured rate
   * over a few seconds is within a few per cent of the configured one (50 ms over 3 s is 1.7%).
   */
  bandwidthBurstMs: number;
}

/** Defaults. */
export const WAN_LIMITS: WanLimits = {
  linksMax: 1024,
  routesPerLinkMax: 256,
  connectionsPerRouteMax: 256,
  // 1 MiB per direction: 40 ms of a 25 MB/s link, several round trips of what the mesh's
  // push-pull and the record exchange send at once. 256 connections × 2 directions × 1 MiB is the
  // worst case per route (512 MiB): the connection bound is what keeps it from being reached.
  tcpQueuedBytesPerDirectionMax: 1024 * 1024,
  tcpResumeBytes: 512 * 1024,
  // 16 KiB: an eleventh of a 64 KiB socket read, a few Ethernet-jumbo packets.
  tcpSegmentBytesMax: 16 * 1024,
  tcpRtoMsMin: 200,
  tcpConnectTimeoutMs: 10_000,
  // 1024 datagrams of a 1.4 KB gossip packet is ~1.4 MB; the byte bound below caps the case of
  // 64 KiB datagrams (64 of them).
  udpDatagramsQueuedPerRouteMax: 1024,
  udpQueuedBytesPerRouteMax: 4 * 1024 * 1024,
  latencyMsMax: 60_000,
  bandwidthBurstMs: 50,
};

/** Fills defaults and checks the bounds: all positive integers, the resume mark below the maximum. */
export function resolveWanLimits(partial: Partial<WanLimits> = {}): WanLimits {
  const limits = { ...WAN_LIMITS, ...partial };
  for (const key of Object.keys(WAN_LIMITS) as (keyof WanLimits)[]) {
    const value = limits[key];
    if (!Number.isSafeInteger(value) || value < 1) throw new EdgeqError('INVALID_CONFIG', `wan limit ${key} must be a positive integer, got ${value}`, { details: { key } });
  }
  for (const key of Object.keys(limits)) {
    if (!(key in WAN_LIMITS)) throw new EdgeqError('INVALID_CONFIG', `unknown wan limit ${key}`, { details: { key } });
  }
  if (limits.tcpResumeBytes >= limits.tcpQueuedBytesPerDirectionMax) {
    throw new EdgeqError('INVALID_CONFIG', `wan limit tcpResumeBytes (${limits.tcpResumeBytes}) must be below tcpQueuedBytesPerDirectionMax (${limits.tcpQueuedBytesPerDirectionMax})`, { details: { key: 'tcpResumeBytes' } });
  }
  if (limits.tcpSegmentBytesMax > limits.tcpQueuedBytesPerDirectionMax) {
    throw new EdgeqError('INVALID_CONFIG', `wan limit tcpSegmentBytesMax (${limits.tcpSegmentBytesMax}) exceeds tcpQueuedBytesPerDirectionMax (${limits.tcpQueuedBytesPerDirectionMax})`, { details: { key: 'tcpSegmentBytesMax' } });
  }
  // A UDP datagram is at most 65,507 bytes: a route whose byte bound is below that would drop it.
  if (limits.udpQueuedBytesPerRouteMax < 65_507) {
    throw new EdgeqError('INVALID_CONFIG', `wan limit udpQueuedBytesPerRouteMax must hold one largest datagram (65507 bytes), got ${limits.udpQueuedBytesPerRouteMax}`, { details: { key: 'udpQueuedBytesPerRouteMax' } });
  }
  return limits;
}
