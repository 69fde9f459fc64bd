/**
 * Bounds-checked big-endian byte writing and reading for the mesh's wire format. The reader
 * throws `MalformedInput` on any overrun or bad value, which the codec turns into a counted drop:
 * a datagram that does not parse is never partly applied.
 */
import { assert } from '../../src/core/index.ts';

/** Thrown by the reader on bytes that do not parse; never escapes the codec. */
export class MalformedInput extends Error {
  override readonly name = 'MalformedInput';
}

/** Appends big-endian fields to a growing buffer. */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialBytes = 256) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  get length(): number {
    return this.pos;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): this {
    assert(Number.isInteger(v) && v >= 0 && v <= 0xff, `u8 out of range: ${v}`);
    this.room(1);
    this.buf[this.pos++] = v;
    return this;
  }

  u16(v: number): this {
    assert(Number.isInteger(v) && v >= 0 && v <= 0xffff, `u16 out of range: ${v}`);
    this.room(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  u32(v: number): this {
    assert(Number.isInteger(v) && v >= 0 && v <= 0xffffffff, `u32 out of range: ${v}`);
    this.room(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  /** A non-negative safe integer (up to 2^53), as 8 bytes (IEEE 754 double, exact in that range). */
  uint53(v: number): this {
    assert(Number.isSafeInteger(v) && v >= 0, `uint53 out of range: ${v}`);
    this.room(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  raw(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** A string of at most 255 UTF-8 bytes, after a one-byte length. */
  str8(s: string): this {
    const n = Buffer.byteLength(s, 'utf8');
    assert(n <= 0xff, `str8 too long: ${n} bytes`);
    this.u8(n);
    this.room(n);
    this.buf.write(s, this.pos, 'utf8');
    this.pos += n;
    return this;
  }

  /** Bytes of at most 65535, after a two-byte length. */
  bytes16(b: Uint8Array): this {
    this.u16(b.length);
    return this.raw(b);
  }

  /** The bytes written so far (a copy, so the writer's buffer can be reused or dropped). */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** Reads big-endian fields from `buf[start, end)`, throwing MalformedInput past the end. */
export class ByteReader {
  private pos: number;

  constructor(
    private readonly buf: Buffer,
    start = 0,
    private readonly end = buf.length,
  ) {
    this.pos = start;
  }

  get offset(): number {
    return this.pos;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw new MalformedInput(`truncated: need ${n} bytes at ${this.pos}, have ${this.end - this.pos}`);
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  uint53(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    if (!Number.isSafeInteger(v) || v < 0) throw new MalformedInput(`not a non-negative safe integer: ${v}`);
    return v;
  }

  raw(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  str8(): string {
    const n = this.u8();
    return this.raw(n).toString('utf8');
  }

  bytes16(): Buffer {
    const n = this.u16();
    return this.raw(n);
  }

  /** Throws unless every byte was read: trailing bytes are as suspicious as missing ones. */
  done(): void {
    if (this.pos !== this.end) throw new MalformedInput(`${this.end - this.pos} trailing bytes`);
  }
}
