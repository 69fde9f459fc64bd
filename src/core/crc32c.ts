/**
 * CRC32C (Castagnoli), the checksum of record batches and protocol frames. `@node-rs/crc32` runs
 * the SSE4.2 instruction at several GB/s with a prebuilt binary; Node's zlib.crc32 is the IEEE
 * polynomial, not this one.
 */
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/** CRC32C of `data`, continuing from `initial` when given. */
export function crc32c(data: Uint8Array, initial = 0): number {
  return nativeCrc32c(data as Buffer, initial) >>> 0;
}
