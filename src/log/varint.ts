/**
 * Zigzag varints as in protobuf and Kafka's record format: small magnitudes of either sign take
 * few bytes. Values are JS numbers; anything up to ±2^53 round-trips exactly.
 */
import { EdgeqError } from '../core/errors.ts';

const TWO_POW_32 = 4294967296;
/** Longest varint we accept: 2^63 needs 10 groups of 7 bits. */
export const VARINT_BYTES_MAX = 10;

/** Zigzag-encodes a signed integer into an unsigned one (0,-1,1,-2 → 0,1,2,3). */
export function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

/** Inverse of `zigzag`. */
export function unzigzag(u: number): number {
  return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
}

/** Bytes that `writeVarint(n)` will take. */
export function varintSize(n: number): number {
  let u = zigzag(n);
  let size = 1;
  while (u >= 0x80) {
    u = Math.floor(u / 128);
    size++;
  }
  return size;
}

/** Writes a zigzag varint at `offset`; returns the offset after it. */
export function writeVarint(buf: Uint8Array, offset: number, n: number): number {
  let u = zigzag(n);
  // Fast path for the common small values: bit operations are only safe below 2^31.
  while (u >= 0x80) {
    buf[offset++] = u < 2147483648 ? (u & 0x7f) | 0x80 : (u % 128) | 0x80;
    u = u < 2147483648 ? u >>> 7 : Math.floor(u / 128);
  }
  buf[offset++] = u;
  return offset;
}

/** Result of a varint read: the value and the offset after it. */
export interface VarintRead {
  value: number;
  next: number;
}

/**
 * Reads a zigzag varint at `offset`, never past `end`. Throws CORRUPT_BATCH when the bytes run out
 * or the varint is longer than any legal one.
 */
export function readVarint(buf: Uint8Array, offset: number, end: number, out: VarintRead): VarintRead {
  let u = 0;
  let mul = 1;
  for (let i = 0; i < VARINT_BYTES_MAX; i++) {
    if (offset >= end) throw new EdgeqError('CORRUPT_BATCH', 'varint runs past the end of the buffer');
    const b = buf[offset++]!;
    u += (b & 0x7f) * mul;
    if (b < 0x80) {
      out.value = unzigzag(u);
      out.next = offset;
      return out;
    }
    mul *= 128;
  }
  throw new EdgeqError('CORRUPT_BATCH', `varint longer than ${VARINT_BYTES_MAX} bytes`);
}

/** Reads a big-endian signed 64-bit integer as a number (exact below 2^53). */
export function readInt64(buf: Buffer, offset: number): number {
  return buf.readInt32BE(offset) * TWO_POW_32 + buf.readUInt32BE(offset + 4);
}

/** Writes a signed integer (|n| < 2^53) as a big-endian 64-bit integer. */
export function writeInt64(buf: Buffer, offset: number, n: number): void {
  const hi = Math.floor(n / TWO_POW_32);
  buf.writeInt32BE(hi, offset);
  buf.writeUInt32BE(n - hi * TWO_POW_32, offset + 4);
}
