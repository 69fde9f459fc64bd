/**
 * Frames: how requests and responses travel on a TCP connection.
 *
 *   0        4        8      10  11  12     14     16              20
 *   +--------+--------+------+---+---+------+------+---------------+---- … ----+
 *   | length |  crc   | magic|ver|flg| api  | apiV | correlationId |   body    |
 *   +--------+--------+------+---+---+------+------+---------------+---- … ----+
 *
 * `length` counts the bytes after itself (so a frame is 4 + length bytes). `crc` is CRC32C over
 * every byte after it: header fields and body, so a flipped bit anywhere is caught before the body
 * is decoded. The body is a protobuf message (src/protocol/edgeq.proto) chosen by the API key and
 * the RESPONSE / ERROR flags.
 *
 * The decoder is a pure state machine: bytes in, frames out, no sockets. A frame longer than
 * `frameBytesMax` is refused from its first four bytes, before any of it is buffered.
 */
import { EdgeqError } from '../core/index.ts';
import { crc32c } from '../core/index.ts';

export const FRAME_MAGIC = 0xe051;
export const PROTOCOL_VERSION = 1;
export const FRAME_HEADER_BYTES = 20;
/** Bytes of a frame after the length field that are header, not body. */
const HEADER_AFTER_LENGTH = FRAME_HEADER_BYTES - 4;

export const FLAG_RESPONSE = 0x01;
/** The body is an ErrorResponse: the request failed as a whole. */
export const FLAG_ERROR = 0x02;
const FLAG_KNOWN_BITS = FLAG_RESPONSE | FLAG_ERROR;

/**
 * Default bound on one frame: a produce request carries at most a few batches of
 * `messageBytesMax` (4 MiB) each; 16 MiB leaves room while keeping one connection's worst-case
 * buffer small.
 */
export const FRAME_BYTES_MAX_DEFAULT = 16 * 1024 * 1024;

/** The fixed header of a frame. */
export interface FrameHeader {
  flags: number;
  apiKey: number;
  apiVersion: number;
  correlationId: number;
}

/** A decoded frame: header and the body bytes (a view into the decoder's buffer; copy to keep). */
export interface Frame extends FrameHeader {
  body: Buffer;
  /** Total bytes on the wire, length field included. */
  sizeBytes: number;
}

/** Encodes one frame. */
export function encodeFrame(header: FrameHeader, body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.length);
  out.writeUInt32BE(out.length - 4, 0);
  out.writeUInt16BE(FRAME_MAGIC, 8);
  out.writeUInt8(PROTOCOL_VERSION, 10);
  out.writeUInt8(header.flags, 11);
  out.writeUInt16BE(header.apiKey, 12);
  out.writeUInt16BE(header.apiVersion, 14);
  out.writeInt32BE(header.correlationId, 16);
  out.set(body, FRAME_HEADER_BYTES);
  out.writeUInt32BE(crc32c(out.subarray(8)), 4);
  return out;
}

/** Limits of a FrameDecoder. */
export interface FrameDecoderOptions {
  frameBytesMax?: number;
}

/**
 * Splits a byte stream into frames. `push` returns the frames completed by the new bytes and
 * throws FRAME_TOO_LARGE or CORRUPT_FRAME on a bad frame; after a throw the stream cannot be
 * resynchronised (frames have no sync marker), so the connection must be closed.
 */
export class FrameDecoder {
  readonly frameBytesMax: number;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Length of the frame being assembled (total bytes), or -1 until its length field arrived. */
  private need = -1;
  private broken: EdgeqError | null = null;

  constructor(options: FrameDecoderOptions = {}) {
    this.frameBytesMax = options.frameBytesMax ?? FRAME_BYTES_MAX_DEFAULT;
  }

  /** Bytes held waiting for the rest of a frame. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Feeds bytes; returns every frame they complete, in order. */
  push(data: Buffer): Frame[] {
    if (this.broken) throw this.broken;
    if (data.length > 0) {
      this.chunks.push(data);
      this.buffered += data.length;
    }
    const frames: Frame[] = [];
    try {
      for (;;) {
        if (this.need < 0) {
          if (this.buffered < 4) break;
          const length = this.peekUInt32();
          if (length < HEADER_AFTER_LENGTH) {
            throw new EdgeqError('CORRUPT_FRAME', `frame length ${length} is shorter than the ${HEADER_AFTER_LENGTH}-byte header`);
          }
          if (length + 4 > this.frameBytesMax) {
            throw new EdgeqError('FRAME_TOO_LARGE', `frame of ${length + 4} bytes exceeds the limit of ${this.frameBytesMax}`, {
              details: { frameBytes: length + 4, frameBytesMax: this.frameBytesMax },
            });
          }
          this.need = length + 4;
        }
        if (this.buffered < this.need) break;
        const bytes = this.take(this.need);
        this.need = -1;
        frames.push(parseFrame(bytes));
      }
    } catch (err) {
      this.broken = err as EdgeqError;
      this.chunks = [];
      this.buffered = 0;
      throw err;
    }
    return frames;
  }

  private peekUInt32(): number {
    return this.collapse(4).readUInt32BE(0);
  }

  /** Makes the first chunk at least `n` bytes long (by joining chunks) and returns it. */
  private collapse(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) return first;
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [all];
    return all;
  }

  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      let i = 0;
      // Walk by index and cut the consumed chunks once: shift() per chunk is quadratic when a
      // large frame arrives in many small reads.
      while (filled < n) {
        const c = this.chunks[i]!;
        const k = Math.min(c.length, n - filled);
        c.copy(out, filled, 0, k);
        filled += k;
        if (k === c.length) i++;
        else this.chunks[i] = c.subarray(k);
      }
      this.chunks.splice(0, i);
    }
    this.buffered -= n;
    return out;
  }
}

/** Checks and splits one complete frame (length field included). */
export function parseFrame(bytes: Buffer): Frame {
  if (bytes.length < FRAME_HEADER_BYTES) {
    throw new EdgeqError('CORRUPT_FRAME', `frame of ${bytes.length} bytes is shorter than its header`);
  }
  const length = bytes.readUInt32BE(0);
  if (length + 4 !== bytes.length) {
    throw new EdgeqError('CORRUPT_FRAME', `frame length field says ${length + 4} bytes, got ${bytes.length}`);
  }
  const crc = bytes.readUInt32BE(4);
  const actual = crc32c(bytes.subarray(8));
  if (crc !== actual) {
    throw new EdgeqError('CORRUPT_FRAME', `frame CRC mismatch (stored ${crc}, computed ${actual})`);
  }
  const magic = bytes.readUInt16BE(8);
  if (magic !== FRAME_MAGIC) throw new EdgeqError('CORRUPT_FRAME', `bad frame magic 0x${magic.toString(16)}`);
  const version = bytes.readUInt8(10);
  if (version !== PROTOCOL_VERSION) {
    throw new EdgeqError('UNSUPPORTED_VERSION', `protocol version ${version} is not supported (this side speaks ${PROTOCOL_VERSION})`);
  }
  const flags = bytes.readUInt8(11);
  if ((flags & ~FLAG_KNOWN_BITS) !== 0) throw new EdgeqError('CORRUPT_FRAME', `unknown frame flags 0x${flags.toString(16)}`);
  return {
    flags,
    apiKey: bytes.readUInt16BE(12),
    apiVersion: bytes.readUInt16BE(14),
    correlationId: bytes.readInt32BE(16),
    body: bytes.subarray(FRAME_HEADER_BYTES),
    sizeBytes: bytes.length,
  };
}
