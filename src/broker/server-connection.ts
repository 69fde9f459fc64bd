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
 * A frame that cannot be parsed (bad CRC, bad magic, over the size limit) leaves the stream with
 * no way to find the next frame, so that connection alone is closed and the event logged.
 */
import type { Socket } from 'node:net';
import { toEdgeqError, type Logger } from '../core/index.ts';
import { FLAG_RESPONSE, FrameDecoder, encodeErrorResponse, writeCoalesced, type Frame } from '../protocol/index.ts';
import type { RequestContext, RequestRouter } from './request-router.ts';

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

interface Slot {
  bytes: number;
  done: boolean;
  response: Buffer | null;
}

/** Serves one socket until it closes. */
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
  ) {
    this.decoder = new FrameDecoder({ frameBytesMax: limits.frameBytesMax });
    this.closed = new Promise<void>((r) => (this.closedResolve = r));
    this.ctx = {
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
      for (const l of [...this.closeListeners]) l();
      this.closeListeners.clear();
      this.closedResolve();
    });
  }

  /** Bytes of requests read and not yet answered. */
  get inflight(): { bytes: number; requests: number } {
    return { bytes: this.inflightBytes, requests: this.slots.length };
  }

  /** Closes the connection at once. */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
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
    const slot: Slot = { bytes: frame.sizeBytes, done: false, response: null };
    this.slots.push(slot);
    this.inflightBytes += frame.sizeBytes;
    this.router.route(frame, this.ctx).then(
      (response) => this.complete(slot, response),
      (err: unknown) => this.complete(slot, encodeErrorResponse(frame, err)),
    );
  }

  private complete(slot: Slot, response: Buffer | null): void {
    slot.done = true;
    slot.response = response;
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
      }
    }
    this.pump();
  }

  private maybeResume(): void {
    if (!this.pausedForInflight && !this.pausedForWrite && !this.ended) this.socket.resume();
  }
}
