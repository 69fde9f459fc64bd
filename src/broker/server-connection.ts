/**
 * One client connection on the broker. Requests are read and started as they arrive (pipelining)
 * and answered strictly in arrival order. Two bounds protect the broker from one client:
 *
 * - `inflightBytesMax`: the bytes of requests read but not yet answered. When reached, the socket
 *   is paused, so the kernel buffers fill and TCP flow control slows the client down, instead of
 *   the broker buffering without limit. `inflightRequestsMax` does the same by count.
 * - `writeBufferBytesMax`: responses waiting for a client that does not read; reading pauses
 *   until the socket drains.
 *
 * Throttling (Kafka's KIP-219): after writing a response that carries a throttle (a produce
 * over its tenant's quota, a fetch on a throttled connection), the socket is not read for that
 * long. Requests already read are still answered, in order; the client's next requests wait in
 * its own buffers and the kernel's, so a client that ignores the throttle gains nothing. One timer
 * per muted connection, moved out when a later response extends the mute.
 *
 * A frame that cannot be parsed (bad CRC, bad magic, over the size limit) leaves the stream with
 * no way to find the next frame, so that connection alone is closed and the event logged.
 */
import type { Socket } from 'node:net';
import { systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { FLAG_RESPONSE, FrameDecoder, encodeErrorResponse, writeCoalesced, type Frame } from '../protocol/index.ts';
import type { RequestContext, RequestRouter, RouteOutcome } from './request-router.ts';
import type { BinaryPrincipal } from './broker-auth.ts';

/** Per-connection bounds. */
export interface ConnectionLimits {
  inflightBytesMax: number;
  inflightRequestsMax: number;
  writeBufferBytesMax: number;
  frameBytesMax: number;
}

export const CONNECTION_LIMITS_DEFAULT: ConnectionLimits = {
  // Four of the largest frames: enough to keep a pipelining producer busy, small per client.
  inflightBytesMax: 64 * 1024 * 1024,
  inflightRequestsMax: 1024,
  writeBufferBytesMax: 64 * 1024 * 1024,
  frameBytesMax: 16 * 1024 * 1024,
};

interface Slot extends RouteOutcome {
  bytes: number;
  done: boolean;
  response: Buffer | null;
}

/** What one connection looks like from outside (backpressure and throttle visibility). */
export interface ConnectionStats {
  /** Bytes of requests read and not yet answered. */
  bytes: number;
  /** Requests read and not yet answered. */
  requests: number;
  /** True while the socket is not read because of a throttle (KIP-219). */
  muted: boolean;
  /**
   * Bytes the broker took from the socket so far (handed to the frame decoder). While paused, Node
   * may still pull bytes from the kernel into the socket's buffer, up to its high-water mark (then
   * TCP flow control pushes back); those are not counted until the broker takes them.
   */
  bytesRead: number;
  /** The client id the connection gave in ApiVersions ('' if none). */
  clientId: string;
  /** Who it authenticated as (a tenant or a cell identity); null: not authenticated, or auth off. */
  principal: string | null;
}

/** Serves one socket until it closes. */

/** Numbers connections in this process (RequestContext.connectionId). */
let nextConnectionId = 1;
export class ServerConnection {
  private readonly decoder: FrameDecoder;
  private readonly slots: Slot[] = [];
  /**
   * Frames decoded but not yet started because a bound was reached. Pausing the socket stops new
   * reads, but one read may already hold many small frames; they wait here, bounded by the size
   * of one socket read.
   */
  private readonly backlog: Frame[] = [];
  private inflightBytes = 0;
  private pausedForInflight = false;
  private pausedForWrite = false;
  /** Not reading because of a throttle, until `mutedUntilMs` (monotonic). */
  private pausedForThrottle = false;
  private mutedUntilMs = 0;
  private muteTimer: TimerHandle | null = null;
  /** The latest throttle deadline known, answered or not yet written (what a fetch reports). */
  private throttledUntilMs = 0;
  private bytesRead = 0;
  private closedResolve!: () => void;
  readonly closed: Promise<void>;
  /** Called once when the socket closes: long polls add themselves and remove themselves when done. */
  private readonly closeListeners = new Set<() => void>();
  private readonly ctx: RequestContext;
  private ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly router: RequestRouter,
    private readonly limits: ConnectionLimits,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
    /** Who a verified client certificate said the client is (mTLS); null: not yet known. */
    principal: BinaryPrincipal | null = null,
  ) {
    this.decoder = new FrameDecoder({ frameBytesMax: limits.frameBytesMax });
    this.closed = new Promise<void>((r) => (this.closedResolve = r));
    this.ctx = {
      connectionId: nextConnectionId++,
      clientId: '',
      host: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`,
      onClose: (listener) => {
        if (this.ended) {
          listener();
          return () => undefined;
        }
        this.closeListeners.add(listener);
        return () => this.closeListeners.delete(listener);
      },
      throttleRemainingMs: () => Math.max(0, Math.ceil(Math.max(this.throttledUntilMs, this.mutedUntilMs) - this.clock.monotonicMs())),
      mute: (ms) => this.muteFor(ms),
      principal,
    };
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => {
      if (this.pausedForWrite) {
        this.pausedForWrite = false;
        this.maybeResume();
      }
    });
    socket.on('error', (err) => this.logger.debug({ err, host: this.ctx.host }, 'connection error'));
    socket.on('close', () => {
      this.ended = true;
      this.muteTimer?.cancel();
      this.muteTimer = null;
      for (const l of [...this.closeListeners]) l();
      this.closeListeners.clear();
      this.closedResolve();
    });
  }

  /** Bytes of requests read and not yet answered. */
  get inflight(): { bytes: number; requests: number } {
    return { bytes: this.inflightBytes, requests: this.slots.length };
  }

  /** In-flight bounds, throttle state and bytes read. */
  get stats(): ConnectionStats {
    return { bytes: this.inflightBytes, requests: this.slots.length, muted: this.pausedForThrottle, bytesRead: this.bytesRead, clientId: this.ctx.clientId, principal: this.ctx.principal?.name ?? null };
  }

  /** Closes the connection at once. */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.bytesRead += chunk.length;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      const e = toEdgeqError(err);
      this.logger.warn({ code: e.code, err: e.message, host: this.ctx.host }, 'bad frame; closing the connection');
      this.socket.destroy();
      return;
    }
    this.backlog.push(...frames);
    this.pump();
  }

  private full(): boolean {
    return this.inflightBytes >= this.limits.inflightBytesMax || this.slots.length >= this.limits.inflightRequestsMax;
  }

  /** Starts backlogged frames while the bounds allow. */
  private pump(): void {
    while (this.backlog.length > 0 && !this.full()) this.dispatch(this.backlog.shift()!);
    if (this.full() || this.backlog.length > 0) {
      if (!this.pausedForInflight) {
        this.pausedForInflight = true;
        this.socket.pause();
      }
    } else if (this.pausedForInflight) {
      this.pausedForInflight = false;
      this.maybeResume();
    }
  }

  private dispatch(frame: Frame): void {
    if (this.ended) return;
    if ((frame.flags & FLAG_RESPONSE) !== 0) {
      this.logger.warn({ host: this.ctx.host }, 'client sent a response frame; closing the connection');
      this.socket.destroy();
      return;
    }
    const slot: Slot = { bytes: frame.sizeBytes, done: false, response: null, throttleMs: 0 };
    this.slots.push(slot);
    this.inflightBytes += frame.sizeBytes;
    this.router.route(frame, this.ctx, slot).then(
      (response) => this.complete(slot, response),
      (err: unknown) => this.complete(slot, encodeErrorResponse(frame, err)),
    );
  }

  private complete(slot: Slot, response: Buffer | null): void {
    slot.done = true;
    slot.response = response;
    if (slot.throttleMs > 0) this.throttledUntilMs = Math.max(this.throttledUntilMs, this.clock.monotonicMs() + slot.throttleMs);
    // Answer in arrival order: a slow request holds back the ones after it.
    while (this.slots.length > 0 && this.slots[0]!.done) {
      const s = this.slots.shift()!;
      this.inflightBytes -= s.bytes;
      if (s.response && !this.ended) {
        writeCoalesced(this.socket, s.response);
        if (this.socket.writableLength > this.limits.writeBufferBytesMax && !this.pausedForWrite) {
          this.pausedForWrite = true;
          this.socket.pause();
        }
        // KIP-219: the throttle runs from the moment its response is sent.
        if (s.throttleMs > 0) this.muteFor(s.throttleMs);
      }
    }
    this.pump();
  }

  /** Stops reading the socket for `ms` from now (a later deadline than the current one only). */
  private muteFor(ms: number): void {
    if (this.ended || !(ms > 0)) return;
    const until = this.clock.monotonicMs() + ms;
    if (until <= this.mutedUntilMs) return;
    this.mutedUntilMs = until;
    if (!this.pausedForThrottle) {
      this.pausedForThrottle = true;
      this.socket.pause();
    }
    if (!this.muteTimer) this.armMuteTimer(ms);
  }

  /** One timer per muted connection: when it fires early (the mute was extended), it is armed again for the rest. */
  private armMuteTimer(ms: number): void {
    this.muteTimer = this.clock.setTimeout(() => {
      this.muteTimer = null;
      if (this.ended) return;
      const left = this.mutedUntilMs - this.clock.monotonicMs();
      if (left > 0) return this.armMuteTimer(left);
      this.pausedForThrottle = false;
      this.maybeResume();
    }, ms);
  }

  private maybeResume(): void {
    if (!this.pausedForInflight && !this.pausedForWrite && !this.pausedForThrottle && !this.ended) this.socket.resume();
  }
}
