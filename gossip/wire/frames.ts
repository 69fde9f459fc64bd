/**
 * Length-prefixed frames for push-pull over TCP: `u32 length, payload`. The decoder is a pure
 * state machine fed whatever chunks the socket delivers (one byte at a time or many frames at
 * once); it refuses a length over its bound before buffering a byte of it, so a peer cannot make
 * it hold more than `frameBytesMax` plus one chunk.
 */
import { EdgeqError } from '../../src/core/index.ts';

/** Bytes of the length prefix. */
export const FRAME_PREFIX_BYTES = 4;

/** Prefixes `payload` with its length. */
export function encodeFrame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_PREFIX_BYTES + payload.length);
  out.writeUInt32BE(payload.length, 0);
  out.set(payload, FRAME_PREFIX_BYTES);
  return out;
}

/** Splits a byte stream into frames of at most `frameBytesMax` bytes. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed: EdgeqError | null = null;

  constructor(private readonly frameBytesMax: number) {}

  /** Bytes held, waiting for the rest of a frame. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /**
   * Feeds a chunk; returns the frames it completed. Throws FRAME_TOO_LARGE (and keeps throwing)
   * once a prefix announces more than the bound: the stream cannot be resynchronised.
   */
  push(chunk: Uint8Array): Buffer[] {
    if (this.failed) throw this.failed;
    if (chunk.length > 0) {
      this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
      this.buffered += chunk.length;
    }
    const frames: Buffer[] = [];
    for (;;) {
      if (this.buffered < FRAME_PREFIX_BYTES) break;
      const length = this.peekLength();
      if (length > this.frameBytesMax) {
        this.failed = new EdgeqError('FRAME_TOO_LARGE', `frame of ${length} bytes is over frameBytesMax ${this.frameBytesMax}`, { details: { length, frameBytesMax: this.frameBytesMax } });
        this.chunks = [];
        this.buffered = 0;
        throw this.failed;
      }
      if (this.buffered < FRAME_PREFIX_BYTES + length) break;
      const all = this.take(FRAME_PREFIX_BYTES + length);
      frames.push(Buffer.from(all.subarray(FRAME_PREFIX_BYTES)));
    }
    return frames;
  }

  private peekLength(): number {
    const first = this.chunks[0]!;
    if (first.length >= FRAME_PREFIX_BYTES) return first.readUInt32BE(0);
    const head = Buffer.concat(this.chunks, FRAME_PREFIX_BYTES);
    return head.readUInt32BE(0);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, n);
  }
}
