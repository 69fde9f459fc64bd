/**
 * Splits a byte stream into newline-terminated lines, refusing any line longer than a bound
 * before buffering more of it: the embedded arbiter's wire is one JSON message per line.
 * Pure: bytes in, lines out, no sockets.
 */
import { EdgeqError } from '../../src/core/index.ts';

/** Turns chunks into complete lines (without the newline). */
export class LineDecoder {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(readonly lineBytesMax: number) {}

  /** Returns the lines the chunk completes; throws FRAME_TOO_LARGE when a line exceeds the bound. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const part = chunk.subarray(start, nl);
      if (this.bufferedBytes + part.length > this.lineBytesMax) throw this.tooLarge(this.bufferedBytes + part.length);
      this.chunks.push(part);
      lines.push(Buffer.concat(this.chunks).toString('utf8'));
      this.chunks = [];
      this.bufferedBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.bufferedBytes + rest.length > this.lineBytesMax) throw this.tooLarge(this.bufferedBytes + rest.length);
      // Copied: the socket may reuse the chunk's memory.
      this.chunks.push(Buffer.from(rest));
      this.bufferedBytes += rest.length;
    }
    return lines;
  }

  private tooLarge(bytes: number): EdgeqError {
    return new EdgeqError('FRAME_TOO_LARGE', `arbiter message of at least ${bytes} bytes exceeds ${this.lineBytesMax}`, { details: { lineBytesMax: this.lineBytesMax } });
  }
}
