/**
 * What the mesh agent needs from a network, injected so the same agent runs over real sockets
 * (node-transport.ts) and over the simulated network (sim/sim-network.ts): datagrams for probes
 * and piggybacked gossip, and one request/response exchange over a stream for push-pull (as
 * memberlist: UDP and TCP on the same port).
 *
 * Callbacks, not promises: a simulated network delivers inside its clock's timers, and a promise
 * continuation would run only after the whole simulated step, out of time order.
 *
 * Addresses are `host:port` strings the transport dials as given; the agent has already passed
 * them through its address translation. The `from` a transport reports is for logs and counters
 * only: the agent never replies to it.
 */
import type { EdgeqError } from '../../src/core/index.ts';

/** What the transport calls back into. */
export interface TransportHandlers {
  /** A datagram arrived (its bytes are the callee's to keep). */
  onPacket(bytes: Buffer, from: string): void;
  /**
   * A stream request arrived (one frame); call `reply` once, with the response frame or null to
   * close without one.
   */
  onStream(request: Buffer, from: string, reply: (response: Buffer | null) => void): void;
  /** A stream was refused before its frame was read (a failed TLS handshake, a refused certificate). */
  onRefused?(reason: string, from: string): void;
}

/** Options the agent hands the transport when it starts. */
export interface TransportStartOptions {
  /** Stream frames over this bound are refused before they are buffered. */
  frameBytesMax: number;
}

/** Where a transport listens. */
export interface BoundAddress {
  host: string;
  port: number;
}

/** A network endpoint of one mesh member. */
export interface MeshTransport {
  /** Binds and starts delivering to `handlers`; resolves with the bound address. */
  start(handlers: TransportHandlers, options: TransportStartOptions): Promise<BoundAddress>;
  /** Sends one datagram; loss is silent, as UDP's. */
  sendPacket(to: string, bytes: Buffer): void;
  /**
   * Sends `request` as one frame over a new stream to `to` and calls `done` once: with the
   * response frame, or with a typed error (refused, closed, over the bound, or `timeoutMs`).
   */
  exchange(to: string, request: Buffer, timeoutMs: number, done: (err: EdgeqError | null, response: Buffer | null) => void): void;
  /** Stops listening and drops open streams. */
  stop(): Promise<void>;
}
